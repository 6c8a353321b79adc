-- How many equivalence classes of each size the raw toy table has.
{{ anon_duck.class_size_distribution(ref('toy_raw'), ['age', 'sex', 'zip']) }}
