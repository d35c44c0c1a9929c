"""memory_sql on PostgreSQL: what a statement may contain, as allow-lists (never lists of attacks).

Every node kind, function, operator and type of a statement must be named here; anything else is
refused, whatever it is. A function that runs SQL text (``ts_stat``, ``ts_rewrite``,
``query_to_xml`` and kin, ``xpath`` over generated XML, ``dblink``...) or reaches outside the
statement (``set_config``, ``current_setting``, ``pg_read_file``, ``pg_terminate_backend``,
``pg_create_*_replication_slot``, ``nextval``, ``lo_*``, ``pg_notify``, advisory locks...) is not
listed, so it is refused, in whatever notation it is written (``ts_stat(q)``, ``(q).ts_stat``).
"""

from __future__ import annotations

NODES = frozenset(
    """RawStmt SelectStmt UpdateStmt ResTarget ColumnRef A_Star A_Const Integer Float String Boolean
    BitString A_Expr BoolExpr NullTest BooleanTest FuncCall TypeCast TypeName CollateClause CaseExpr
    CaseWhen CoalesceExpr MinMaxExpr SQLValueFunction SubLink RangeVar RangeSubselect RangeFunction
    JoinExpr Alias SortBy WindowDef WithClause CommonTableExpr A_ArrayExpr A_Indirection A_Indices
    RowExpr GroupingSet ColumnDef""".split()
)

FUNCTIONS = frozenset(
    """length char_length character_length octet_length bit_length lower upper initcap substr substring
    left right strpos position replace translate trim btrim ltrim rtrim lpad rpad repeat reverse
    split_part concat concat_ws format starts_with regexp_replace regexp_match regexp_matches
    regexp_count regexp_instr regexp_like regexp_substr regexp_split_to_array regexp_split_to_table
    string_to_array array_to_string string_to_table chr ascii md5 to_hex overlay normalize
    similar_to_escape abs round floor ceil ceiling trunc mod power sqrt sign div ln log exp random
    count sum avg min max string_agg array_agg bool_and bool_or every json_agg jsonb_agg group_concat
    mode percentile_cont percentile_disc row_number rank dense_rank lag lead first_value last_value
    nth_value ntile percent_rank cume_dist now date_trunc date_part extract to_char to_date to_number
    to_timestamp age make_date make_time make_timestamp make_interval clock_timestamp timezone date_bin
    justify_days justify_hours json_build_object jsonb_build_object json_build_array jsonb_build_array
    to_json to_jsonb json_extract_path_text jsonb_extract_path_text json_extract_path jsonb_extract_path
    json_array_length jsonb_array_length json_typeof jsonb_typeof json_array_elements
    jsonb_array_elements json_array_elements_text jsonb_array_elements_text json_each jsonb_each
    json_each_text jsonb_each_text json_object_keys jsonb_object_keys jsonb_pretty generate_series
    unnest array_length cardinality num_nulls num_nonnulls to_tsvector to_tsquery plainto_tsquery
    websearch_to_tsquery phraseto_tsquery ts_rank ts_rank_cd ts_headline""".split()
)

#: Operators by their symbol (resolved in pg_catalog: the statement's search_path has no other
#: schema that holds operators), and the words pglast names BETWEEN by.
OPERATORS = frozenset(
    """= <> != < > <= >= + - * / % ^ || ~~ !~~ ~~* !~~* ~ !~ ~* !~* @@ -> ->> #> #>> #- @> <@ ? ?| ?& @?
    && & | # << >> |/ ||/ @ ^@""".split()
) | {"BETWEEN", "NOT BETWEEN", "BETWEEN SYMMETRIC", "NOT BETWEEN SYMMETRIC"}

#: Types a value may be cast to (pglast's names: ``integer`` is int4, ``double precision`` float8).
TYPES = frozenset(
    """text varchar bpchar int2 int4 int8 numeric float4 float8 bool date time timetz timestamp
    timestamptz interval json jsonb tsvector tsquery uuid bytea""".split()
)

#: Functions whose rows have named fields (their OUT parameters), as PostgreSQL names the columns.
RECORD_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "json_each": ("key", "value"),
    "jsonb_each": ("key", "value"),
    "json_each_text": ("key", "value"),
    "jsonb_each_text": ("key", "value"),
}
#: Functions of one OUT parameter: PostgreSQL names their column for it, whatever the alias.
OUT_NAMED: dict[str, str] = {
    "json_array_elements": "value",
    "jsonb_array_elements": "value",
    "json_array_elements_text": "value",
    "jsonb_array_elements_text": "value",
}

#: The column PostgreSQL names for an SQL value function (current_user...), by pglast's op name.
SQL_VALUE_NAMES: dict[str, str] = {
    "SVFOP_CURRENT_DATE": "current_date",
    "SVFOP_CURRENT_TIME": "current_time",
    "SVFOP_CURRENT_TIME_N": "current_time",
    "SVFOP_CURRENT_TIMESTAMP": "current_timestamp",
    "SVFOP_CURRENT_TIMESTAMP_N": "current_timestamp",
    "SVFOP_LOCALTIME": "localtime",
    "SVFOP_LOCALTIME_N": "localtime",
    "SVFOP_LOCALTIMESTAMP": "localtimestamp",
    "SVFOP_LOCALTIMESTAMP_N": "localtimestamp",
    "SVFOP_CURRENT_ROLE": "current_role",
    "SVFOP_CURRENT_USER": "current_user",
    "SVFOP_USER": "user",
    "SVFOP_SESSION_USER": "session_user",
    "SVFOP_CURRENT_CATALOG": "current_catalog",
    "SVFOP_CURRENT_SCHEMA": "current_schema",
}


def plain_name(parts: list[str]) -> str:
    """``pg_catalog.x`` or ``x`` as ``x``; anything else qualified as its dotted name (never listed)."""
    if len(parts) == 2 and parts[0] == "pg_catalog":
        return parts[1]
    return ".".join(parts) if len(parts) != 1 else parts[0]
