{#- Identifiers and literals: the only way a name or a value reaches the SQL of this package.

    dbt's adapter.quote wraps a name in quotes without escaping the quote character inside it;
    these macros double it, so any column name a warehouse allows (quotes, spaces, keywords,
    unicode) is one identifier. The Python verifiers render these same macros (anon_duck's
    sqlrender shim); a test holds them equal to sqlglot's quoting. -#}

{% macro quote_identifier(name) -%}
{{- adapter.dispatch('quote_identifier', 'anon_duck')(name) -}}
{%- endmacro %}

{% macro default__quote_identifier(name) -%}
{%- if name is not string or name | length == 0 -%}
{{- exceptions.raise_compiler_error("anon_duck: a column name must be a non-empty string; got " ~ name) -}}
{%- endif -%}
"{{ name | replace('"', '""') }}"
{%- endmacro %}

{% macro spark__quote_identifier(name) -%}
{%- if name is not string or name | length == 0 -%}
{{- exceptions.raise_compiler_error("anon_duck: a column name must be a non-empty string; got " ~ name) -}}
{%- endif -%}
`{{ name | replace('`', '``') }}`
{%- endmacro %}

{#- A string literal. Spark reads backslash escapes and glues adjacent literals ('a''b' is
    'ab' there), so its spelling escapes with backslashes instead of doubling. -#}
{% macro string_literal(value) -%}
{{- adapter.dispatch('string_literal', 'anon_duck')(value) -}}
{%- endmacro %}

{% macro default__string_literal(value) -%}
'{{ value | string | replace("'", "''") }}'
{%- endmacro %}

{% macro spark__string_literal(value) -%}
'{{ value | string | replace('\\', '\\\\') | replace("'", "\\'") }}'
{%- endmacro %}

{#- An integer argument (k, l, m, K, ...) checked and rendered as a literal: a value that is not
    an integer >= minimum is a compiler error naming the argument, never a warehouse error. -#}
{% macro integer_argument(value, name, minimum=1) -%}
{%- if value is sameas true or value is sameas false or value is not integer or value < minimum -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " must be an integer >= " ~ minimum ~ "; got " ~ value) -}}
{%- endif -%}
{{- value -}}
{%- endmacro %}

{#- A list of column names, checked: a non-empty list (unless allow_empty) of distinct
    non-empty strings. Renders nothing. -#}
{% macro check_columns(columns, name, allow_empty=false) -%}
{%- if columns is string or columns is not iterable or columns is mapping -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " must be a list of column names; got " ~ columns) -}}
{%- endif -%}
{%- if columns | length == 0 and not allow_empty -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " must name at least one column") -}}
{%- endif -%}
{%- for c in columns -%}
{%- if c is not string or c | length == 0 -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " holds " ~ c ~ ", which is not a column name") -}}
{%- endif -%}
{%- endfor -%}
{%- if columns | unique | list | length != columns | length -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " names a column twice: " ~ columns | join(', ')) -}}
{%- endif -%}
{%- endmacro %}

{#- The output names of grouped columns: the columns themselves (what a dbt user wants to read)
    unless the caller gives positional aliases (the Python verifiers do, so that a column named
    like an output field, e.g. class_size, cannot collide with it). -#}
{% macro output_names(columns, aliases) -%}
{%- if aliases is none -%}{{- return(columns) -}}{%- endif -%}
{%- if aliases | length != columns | length -%}
{{- exceptions.raise_compiler_error("anon_duck: aliases must name each of " ~ columns | join(', ')) -}}
{%- endif -%}
{{- return(aliases) -}}
{%- endmacro %}

{#- A positive number argument (c of recursive (c, l)-diversity, t of t-closeness) checked and
    rendered as a DOUBLE literal; ``maximum`` bounds it when given. A value that is not a number
    in range is a compiler error naming the argument. -#}
{% macro positive_number(value, name, maximum=none, allow_zero=false) -%}
{%- if value is sameas true or value is sameas false or value is not number
      or value < 0 or (value == 0 and not allow_zero) or (maximum is not none and value > maximum) -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ name ~ " must be a number " ~ (">= 0" if allow_zero else "> 0") ~ (" and <= " ~ maximum if maximum is not none else "") ~ "; got " ~ value) -}}
{%- endif -%}
CAST({{ value | float }} AS {{ anon_duck.type_double() }})
{%- endmacro %}

{#- Type names the checks cast to: DuckDB and Spark read DOUBLE and STRING, PostgreSQL spells
    them DOUBLE PRECISION and TEXT. -#}
{% macro type_double() -%}
{{- adapter.dispatch('type_double', 'anon_duck')() -}}
{%- endmacro %}

{% macro default__type_double() -%}DOUBLE{%- endmacro %}

{% macro postgres__type_double() -%}DOUBLE PRECISION{%- endmacro %}

{% macro type_text() -%}
{{- adapter.dispatch('type_text', 'anon_duck')() -}}
{%- endmacro %}

{% macro default__type_text() -%}STRING{%- endmacro %}

{% macro postgres__type_text() -%}TEXT{%- endmacro %}
