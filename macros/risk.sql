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
      risk_measures(relation, columns, k=5, thresholds=[])
                                                  one row:
          n_records, n_classes, min_class_size, max_class_size,
          prosecutor_risk_max   1 / min_class_size (the highest risk of any record)
          prosecutor_risk_avg   n_classes / n_records (the mean of 1 / class_size over records)
          records_below_k       share of records in classes smaller than k (risk > 1/k)
          sample_uniques        records alone in their class (class_size = 1)
          at_risk_1 .. at_risk_<t>  one per threshold t_i in (0, 1]: the share of records whose
                                risk 1 / class_size exceeds t_i (ARX's "records at risk")
    On an empty relation n_records = n_classes = 0 and the rest is NULL.

    The other measures (docs/risk.md defines each, with its source):
      population_risk(relation, population, columns, thresholds=[])
                          journalist and marketer risk against a population relation with the
                          same columns (El Emam; ARX's sample summary)
      class_sizes_by_set(relation, columns, sets)
                          the class-size histogram of several column subsets in one pass
                          (which QIs drive uniqueness)
      itemset_risk(relation, id, code, m, k)
                          persons holding a set of <= m codes that fewer than k (or no other)
                          persons hold
      trajectory_risk(relation, id, position, code, age, j_max)
                          persons with a unique (code, age) trajectory, or unique on its first j
                          events -#}
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

{% macro risk_measures(relation, columns, k=5, thresholds=[]) -%}
{{- adapter.dispatch('risk_measures', 'anon_duck')(relation, columns, k, thresholds) -}}
{%- endmacro %}

{% macro default__risk_measures(relation, columns, k, thresholds) -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
SELECT coalesce(sum(class_size), 0) AS n_records,
       count(*) AS n_classes,
       min(class_size) AS min_class_size,
       max(class_size) AS max_class_size,
       CAST(1 AS {{ anon_duck.type_double() }}) / min(class_size) AS prosecutor_risk_max,
       CAST(count(*) AS {{ anon_duck.type_double() }}) / sum(class_size) AS prosecutor_risk_avg,
       CAST(sum(CASE WHEN class_size < {{ k_value }} THEN class_size ELSE 0 END) AS {{ anon_duck.type_double() }}) / sum(class_size) AS records_below_k,
       coalesce(sum(CASE WHEN class_size = 1 THEN 1 ELSE 0 END), 0) AS sample_uniques
       {%- for t in thresholds %},
       {{ anon_duck.share_at_risk('class_size', 'class_size', t) }} AS at_risk_{{ loop.index }}
       {%- endfor %}

FROM ({{ anon_duck.equivalence_classes(relation, columns) }}) AS anon_duck_classes
{%- endmacro %}

{#- A risk threshold, checked and rendered as a literal: a number in (0, 1]. -#}
{% macro threshold_argument(value) -%}
{%- if value is sameas true or value is sameas false or value is not number or value <= 0 or value > 1 -%}
{{- exceptions.raise_compiler_error("anon_duck: a risk threshold must be a number in (0, 1]; got " ~ value) -}}
{%- endif -%}
CAST({{ value }} AS {{ anon_duck.type_double() }})
{%- endmacro %}

{#- The share of records whose risk 1 / ``size`` exceeds threshold ``t``, over rows that each
    stand for ``weight`` records: the records at risk (ARX's rA). -#}
{% macro share_at_risk(size, weight, t) -%}
CAST(sum(CASE WHEN CAST(1 AS {{ anon_duck.type_double() }}) / {{ size }} > {{ anon_duck.threshold_argument(t) }} THEN {{ weight }} ELSE 0 END) AS {{ anon_duck.type_double() }}) / sum({{ weight }})
{%- endmacro %}

{#- Journalist and marketer risk (El Emam 2013; ARX's RiskModelSampleSummary): the sample is
    ``relation``, the population a relation ``population`` with the same ``columns``, holding
    every sample record. For each sample class j, f = its size in the sample and pop_f = its
    size in the population (0 when the population lacks it). One row:
      n_records, n_classes
      short_classes            classes with pop_f < f: the population misses sample records
                               (every other column is then meaningless; callers refuse it)
      min_population_class_size
      journalist_risk_max      1 / min pop_f
      journalist_risk_avg      max(n_classes / sum pop_f, sum(f / pop_f) / n_records)
      marketer_risk            sum(f / pop_f) / n_records: the expected share of sample records
                               a marketer matching the whole sample to the population re-identifies
      population_uniques_in_sample   sample uniques that are also population uniques
      at_risk_1 .. at_risk_<t> share of sample records with 1 / pop_f > t_i -#}
{% macro population_risk(relation, population, columns, thresholds=[]) -%}
{{- adapter.dispatch('population_risk', 'anon_duck')(relation, population, columns, thresholds) -}}
{%- endmacro %}

{% macro default__population_risk(relation, population, columns, thresholds) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- set grouped -%}{% for c in columns %}{{ anon_duck.quote_identifier(c) }}{{ ", " if not loop.last }}{% endfor %}{%- endset -%}
WITH anon_duck_sample AS (
    SELECT {{ grouped }}, count(*) AS f FROM {{ relation }} GROUP BY {{ grouped }}
), anon_duck_population AS (
    SELECT {{ grouped }}, count(*) AS pop_f FROM {{ population }} GROUP BY {{ grouped }}
), anon_duck_pairs AS (
    SELECT s.f, coalesce(p.pop_f, 0) AS pop_f,
           CAST(s.f AS {{ anon_duck.type_double() }}) / nullif(p.pop_f, 0) AS matched
    FROM anon_duck_sample AS s
    LEFT JOIN anon_duck_population AS p
      ON {% for c in columns %}s.{{ anon_duck.quote_identifier(c) }} = p.{{ anon_duck.quote_identifier(c) }}{{ " AND " if not loop.last }}{% endfor %}

)
SELECT coalesce(sum(f), 0) AS n_records,
       count(*) AS n_classes,
       coalesce(sum(CASE WHEN pop_f < f THEN 1 ELSE 0 END), 0) AS short_classes,
       min(pop_f) AS min_population_class_size,
       CAST(1 AS {{ anon_duck.type_double() }}) / nullif(min(pop_f), 0) AS journalist_risk_max,
       greatest(CAST(count(*) AS {{ anon_duck.type_double() }}) / nullif(sum(pop_f), 0), sum(matched) / sum(f)) AS journalist_risk_avg,
       sum(matched) / sum(f) AS marketer_risk,
       coalesce(sum(CASE WHEN f = 1 AND pop_f = 1 THEN 1 ELSE 0 END), 0) AS population_uniques_in_sample
       {%- for t in thresholds %},
       {{ anon_duck.share_at_risk('nullif(pop_f, 0)', 'f', t) }} AS at_risk_{{ loop.index }}
       {%- endfor %}

FROM anon_duck_pairs
{%- endmacro %}

{#- class_sizes_by_set(relation, columns, sets): the class-size histogram of every column subset
    in ``sets`` (lists of names from ``columns``; [] is the whole relation as one class), in one
    pass through GROUP BY GROUPING SETS. ``gid`` tells the subsets apart: bit set = column not
    in the subset, first column = highest bit (as lkc_groups_ctes). Which QIs drive uniqueness
    (how many sample uniques remain when a QI or a pair of QIs is left out; a QI's distinct
    values and the record pairs it separates) is read off these histograms.
    Output: gid, class_size, n_classes. -#}
{% macro class_sizes_by_set(relation, columns, sets) -%}
{{- adapter.dispatch('class_sizes_by_set', 'anon_duck')(relation, columns, sets) -}}
{%- endmacro %}

{% macro default__class_sizes_by_set(relation, columns, sets) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- set used = [] -%}
{%- for set in sets %}{% for q in set %}{% if q not in columns %}{{ exceptions.raise_compiler_error("anon_duck: argument sets names " ~ q ~ ", which is not one of the columns") }}{% endif %}{% if q not in used %}{% do used.append(q) %}{% endif %}{% endfor %}{% endfor -%}
{%- set n_cols = columns | length -%}
SELECT gid, class_size, count(*) AS n_classes
FROM (
    SELECT ({% for q in columns %}{% if q in used %}grouping({{ anon_duck.quote_identifier(q) }}){% else %}1{% endif %} * {{ 2 ** (n_cols - 1 - loop.index0) }}{{ " + " if not loop.last }}{% endfor %}) AS gid,
           count(*) AS class_size
    FROM {{ relation }}
    GROUP BY GROUPING SETS (
{% for set in sets %}
        ({% for q in set %}{{ anon_duck.quote_identifier(q) }}{{ ", " if not loop.last }}{% endfor %}){{ "," if not loop.last }}
{% endfor %}
    )
) AS anon_duck_classes
GROUP BY gid, class_size
{%- endmacro %}

{#- itemset_risk(relation, id, code, m, k): how many persons a set of codes singles out. A
    person is at risk for size m' if some set of at most m' of their codes is held by fewer than
    k persons (below_k_<m'>), and unique for m' if some such set is held by them alone
    (unique_<m'>): the adversary of k^m-anonymity (Terrovitis et al. 2008), who knows up to m
    of a person's codes. ``relation`` is long, one row per (id, code); the rare itemsets are
    the verifiers' (rare_itemsets, macros/itemsets.sql).
    Output: one row, below_k_1, unique_1, .., below_k_<m>, unique_<m> (person counts). -#}
{% macro itemset_risk(relation, id, code, m, k) -%}
{{- adapter.dispatch('itemset_risk', 'anon_duck')(relation, id, code, m, k) -}}
{%- endmacro %}

{% macro default__itemset_risk(relation, id, code, m, k) -%}
{{- anon_duck.check_columns([id, code], 'id and code') -}}
{%- set m_value = anon_duck.integer_argument(m, 'm') | int -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') | int -%}
{#- a unique set is rare at any k >= 2; at k = 1 nothing is below k but uniques still count -#}
{%- set rare_below = [k_value, 2] | max -%}
WITH anon_duck_records AS (
    SELECT DISTINCT {{ anon_duck.quote_identifier(id) }} AS record, {{ anon_duck.quote_identifier(code) }} AS item
    FROM {{ relation }}
    WHERE {{ anon_duck.quote_identifier(code) }} IS NOT NULL
), anon_duck_rare AS (
{{ anon_duck.rare_itemsets('anon_duck_records', [], 'record', 'item', m_value, rare_below) }}
), anon_duck_held AS (
{% for size in range(1, m_value + 1) %}
    SELECT c1.record, r.size, r.support
    FROM anon_duck_rare AS r
    JOIN anon_duck_records AS c1 ON c1.item = r.item_1
{% for i in range(2, size + 1) %}
    JOIN anon_duck_records AS c{{ i }} ON c{{ i }}.record = c1.record AND c{{ i }}.item = r.item_{{ i }}
{% endfor %}
    WHERE r.size = {{ size }}
{% if not loop.last %}
    UNION ALL
{% endif %}
{% endfor %}
)
SELECT {% for mm in range(1, m_value + 1) %}count(DISTINCT CASE WHEN size <= {{ mm }} AND support < {{ k_value }} THEN record END) AS below_k_{{ mm }},
       count(DISTINCT CASE WHEN size <= {{ mm }} AND support = 1 THEN record END) AS unique_{{ mm }}{{ "," if not loop.last }}
       {% endfor %}

FROM anon_duck_held
{%- endmacro %}

{#- trajectory_risk(relation, id, position, code, age, j_max): persons singled out by their
    longitudinal events. A person's trajectory is their (code, age) events in ``position``
    order; two persons share it when the codes and ages are equal position by position. One
    pass (GROUP BY GROUPING SETS) counts the persons whose whole trajectory is unique (j = 0)
    and those whose first j events are (j = 1 .. j_max; a person with fewer than j events
    shows them all).
    Output: j, n_persons, unique_persons. -#}
{% macro trajectory_risk(relation, id, position, code, age, j_max) -%}
{{- adapter.dispatch('trajectory_risk', 'anon_duck')(relation, id, position, code, age, j_max) -}}
{%- endmacro %}

{% macro default__trajectory_risk(relation, id, position, code, age, j_max) -%}
{{- anon_duck.check_columns([id, position, code, age], 'id, position, code and age') -}}
{%- set j_value = anon_duck.integer_argument(j_max, 'j_max') | int -%}
{%- set pos = anon_duck.quote_identifier(position) -%}
WITH anon_duck_trajectories AS (
    SELECT list({{ anon_duck.quote_identifier(code) }} ORDER BY {{ pos }}) AS codes,
           list({{ anon_duck.quote_identifier(age) }} ORDER BY {{ pos }}) AS ages
    FROM {{ relation }}
    GROUP BY {{ anon_duck.quote_identifier(id) }}
), anon_duck_prefixes AS (
    SELECT codes AS c_0, ages AS a_0{% for j in range(1, j_value + 1) %}, codes[1:{{ j }}] AS c_{{ j }}, ages[1:{{ j }}] AS a_{{ j }}{% endfor %}

    FROM anon_duck_trajectories
), anon_duck_classes AS (
    SELECT CASE {% for j in range(0, j_value + 1) %}WHEN grouping(c_{{ j }}) = 0 THEN {{ j }} {% endfor %}END AS j,
           count(*) AS class_size
    FROM anon_duck_prefixes
    GROUP BY GROUPING SETS ({% for j in range(0, j_value + 1) %}(c_{{ j }}, a_{{ j }}){{ ", " if not loop.last }}{% endfor %})
)
SELECT j, sum(class_size) AS n_persons, sum(CASE WHEN class_size = 1 THEN 1 ELSE 0 END) AS unique_persons
FROM anon_duck_classes
GROUP BY j
{%- endmacro %}
