{#- Re-identification risk of a table under the prosecutor model (El Emam; ARX's risk analysis):
    an attacker who knows a person is in the table and knows their QI values finds them in
    their equivalence class, so a record's risk is 1 / (its class size).

    These are the measures the verifiers report next to a verdict and the risk report prints;
    one definition, used from Python and from dbt models alike:

      equivalence_classes(relation, columns, sensitive=none)
                                                  one row per class: class_size, n_distinct
                                                  (distinct non-NULL values of sensitive; NULL
                                                  without one)
      class_size_distribution(relation, columns)  one row per class size: class_size,
                                                  n_classes, n_records
      risk_measures(relation, columns, k=5)       one row:
          n_records, n_classes, min_class_size, max_class_size,
          prosecutor_risk_max   1 / min_class_size (the highest risk of any record)
          prosecutor_risk_avg   n_classes / n_records (the mean of 1 / class_size over records)
          records_below_k       share of records in classes smaller than k (risk > 1/k)
          sample_uniques        records alone in their class (class_size = 1)
    On an empty relation n_records = n_classes = 0 and the rest is NULL. -#}
{% macro equivalence_classes(relation, columns, sensitive=none) -%}
{{- adapter.dispatch('equivalence_classes', 'anon_duck')(relation, columns, sensitive) -}}
{%- endmacro %}

{% macro default__equivalence_classes(relation, columns, sensitive) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
SELECT count(*) AS class_size,
       {% if sensitive is not none %}count(DISTINCT {{ anon_duck.quote_identifier(sensitive) }}){% else %}CAST(NULL AS BIGINT){% endif %} AS n_distinct
FROM {{ relation }}
GROUP BY {% for c in columns %}{{ anon_duck.quote_identifier(c) }}{{ ", " if not loop.last }}{% endfor %}
{%- endmacro %}

{% macro class_size_distribution(relation, columns) -%}
{{- adapter.dispatch('class_size_distribution', 'anon_duck')(relation, columns) -}}
{%- endmacro %}

{% macro default__class_size_distribution(relation, columns) -%}
SELECT class_size, count(*) AS n_classes, sum(class_size) AS n_records
FROM ({{ anon_duck.equivalence_classes(relation, columns) }}) AS anon_duck_classes
GROUP BY class_size
{%- endmacro %}

{% macro risk_measures(relation, columns, k=5) -%}
{{- adapter.dispatch('risk_measures', 'anon_duck')(relation, columns, k) -}}
{%- endmacro %}

{% macro default__risk_measures(relation, columns, k) -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
SELECT coalesce(sum(class_size), 0) AS n_records,
       count(*) AS n_classes,
       min(class_size) AS min_class_size,
       max(class_size) AS max_class_size,
       CAST(1 AS DOUBLE) / min(class_size) AS prosecutor_risk_max,
       CAST(count(*) AS DOUBLE) / sum(class_size) AS prosecutor_risk_avg,
       CAST(sum(CASE WHEN class_size < {{ k_value }} THEN class_size ELSE 0 END) AS DOUBLE) / sum(class_size) AS records_below_k,
       coalesce(sum(CASE WHEN class_size = 1 THEN 1 ELSE 0 END), 0) AS sample_uniques
FROM ({{ anon_duck.equivalence_classes(relation, columns) }}) AS anon_duck_classes
{%- endmacro %}
