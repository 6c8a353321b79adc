{#- check_model(model, columns, argument): at execution, a compiler error naming the argument
    when a column is not in the model, or when the model is empty (a privacy test that passes
    on zero rows proves nothing). Parse time renders nothing and checks nothing, as dbt's
    own macros do. Renders nothing. dbt only: the Python verifiers make the same checks on
    their own (argcheck, column profile). -#}
{% macro check_model(model, columns, argument) -%}
{{- anon_duck.check_columns(columns, argument) -}}
{%- if execute -%}
{%- set present = adapter.get_columns_in_relation(model) | map(attribute='name') | map('lower') | list -%}
{%- for c in columns -%}
{%- if c | lower not in present -%}
{{- exceptions.raise_compiler_error("anon_duck: argument " ~ argument ~ " names column '" ~ c ~ "', which " ~ model ~ " does not have (it has: " ~ present | join(', ') ~ ")") -}}
{%- endif -%}
{%- endfor -%}
{%- set n = run_query("SELECT count(*) FROM " ~ model).columns[0].values()[0] -%}
{%- if n == 0 -%}
{{- exceptions.raise_compiler_error("anon_duck: model " ~ model ~ " is empty: a privacy test on zero rows proves nothing") -}}
{%- endif -%}
{%- endif -%}
{%- endmacro %}
