{#- dbt generic data tests: each returns the offending groups (zero rows = pass, dbt's
    convention). The SQL is the package's macros, the same files anon_duck's Python verifiers
    render; these blocks only check the arguments against the model and pick the QI subsets.
    Only dbt reads this folder (a {% test %} block is dbt syntax). -#}

{% test k_anonymous(model, columns, k) %}
{{ anon_duck.check_model(model, columns, 'columns') }}
{{ anon_duck.k_anonymity_violations(model, columns, k) }}
{% endtest %}

{% test l_diverse(model, columns, sensitive, l, entropy=false, kind=none, c=none) %}
{{ anon_duck.check_model(model, columns + [sensitive], 'columns and sensitive') }}
{{ anon_duck.l_diversity_violations(model, columns, sensitive, l, entropy=entropy, kind=kind, c=c) }}
{% endtest %}

{% test t_close(model, columns, sensitive, t, ordered=false, reference_model=none) %}
{{ anon_duck.check_model(model, columns + [sensitive], 'columns and sensitive') }}
{% if reference_model is not none %}
{{ anon_duck.check_model(reference_model, [sensitive], 'sensitive of reference_model') }}
{% endif %}
{{ anon_duck.t_closeness_violations(model, columns, sensitive, t, ordered=ordered, reference=reference_model) }}
{% endtest %}

{% test min_count(model, key, count, min_count) %}
{{ anon_duck.check_model(model, [key, count], 'key and count') }}
{{ anon_duck.min_count_violations(model, key, count, min_count) }}
{% endtest %}

{% test km_anonymous(model, id, code, k, m, group_columns=[], code_is_list=false) %}
{{ anon_duck.check_model(model, [id, code] + group_columns, 'id, code and group_columns') }}
{{ anon_duck.km_anonymity_violations(model, id, code, k, m, group_columns=group_columns, code_is_list=code_is_list) }}
{% endtest %}

{% test kkm_anonymous(model, columns, id, code, k, m, codes_model=none) %}
{% if codes_model is none %}
{{ anon_duck.check_model(model, columns + [id, code], 'columns, id and code') }}
{% else %}
{{ anon_duck.check_model(model, columns + [id], 'columns and id') }}
{{ anon_duck.check_model(codes_model, [id, code], 'id and code of codes_model') }}
{% endif %}
{{ anon_duck.kkm_anonymity_violations(model, columns, id, code, k, m, codes_relation=codes_model) }}
{% endtest %}

{% test lkc_private(model, columns, L, K, C, sensitive=none, sensitive_values=none) %}
{{ anon_duck.check_model(model, columns + ([sensitive] if sensitive is not none else []), 'columns and sensitive') }}
{%- set L_value = anon_duck.integer_argument(L, 'L') | int -%}
{%- set c = anon_duck.fraction_parts(C) -%}
{{ anon_duck.lkc_violations(model, columns, sensitive, sensitive_values, K, c[0], c[1], anon_duck.lkc_subsets(columns, L_value)) }}
{% endtest %}
