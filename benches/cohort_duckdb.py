"""The cohort bench's phenotype as DuckDB SQL over the same Parquet files.

Same semantics as phiflow's resolver for this phenotype: events are every note mention (dated
by its note) plus every clinical row that was not derived from a mention (the load records
each derived row in phiflow_derived_event); a concept set matches
by id and by vocabulary when the concept is known; the default assertion filter keeps affirmed
mentions; `t2d` needs two events, `met` needs one within [-30, +365] days of a `t2d` event, and
`ckd` must be absent. Prints one JSON object: run times, the patient count and the first ids.

Usage: cohort_duckdb.py DATASET_DIR PARAMS_JSON RUNS
"""

import json
import statistics
import sys
import time

import duckdb


def sql(d, p):
    ids = lambda key: ", ".join(str(i) for i in p[key])
    return f"""
WITH
concept AS (SELECT concept_id, vocabulary_id FROM read_parquet('{d}/concept.parquet')),
note AS (SELECT note_id, person_id, note_date FROM read_parquet('{d}/note.parquet')),
nlp AS (
  SELECT note_nlp_id, note_id, coalesce(note_nlp_concept_id, 0) AS concept_id,
         term_exists AS te, coalesce(term_modifiers, '') AS m
  FROM read_parquet('{d}/note_nlp.parquet')),
mentions AS (
  SELECT n.person_id, nlp.concept_id, n.note_date AS d,
         contains(m, 'negation=negated')
           OR (coalesce(te, '') = 'N'
               AND NOT (contains(m, 'certainty=uncertain') OR contains(m, 'temporality=hypothetical')
                        OR contains(m, 'experiencer=family') OR contains(m, 'experiencer=other')))
           AS negated
  FROM nlp JOIN note n USING (note_id)),
derived AS (SELECT note_nlp_id, event_table FROM read_parquet('{d}/phiflow_derived_event.parquet')),
structured AS (
  SELECT person_id, condition_concept_id AS concept_id, condition_start_date AS d, false AS negated
  FROM read_parquet('{d}/condition_occurrence.parquet')
  WHERE condition_occurrence_id NOT IN
        (SELECT note_nlp_id FROM derived WHERE event_table = 'condition_occurrence')
  UNION ALL
  SELECT person_id, drug_concept_id, drug_exposure_start_date, false
  FROM read_parquet('{d}/drug_exposure.parquet')
  WHERE drug_exposure_id NOT IN
        (SELECT note_nlp_id FROM derived WHERE event_table = 'drug_exposure')),
ev AS (
  SELECT e.person_id, e.concept_id, e.d, e.negated, c.vocabulary_id AS v
  FROM (SELECT * FROM mentions UNION ALL SELECT * FROM structured) e
  LEFT JOIN concept c USING (concept_id)),
t2d AS (SELECT person_id, d FROM ev
        WHERE concept_id IN ({ids('t2d')}) AND (v IS NULL OR lower(v) = 'snomed') AND NOT negated),
t2d_p AS (SELECT person_id FROM t2d GROUP BY person_id HAVING count(*) >= 2),
met AS (SELECT person_id, d FROM ev
        WHERE concept_id IN ({ids('metformin')}) AND (v IS NULL OR lower(v) = 'rxnorm') AND NOT negated),
met_p AS (SELECT DISTINCT m.person_id FROM met m JOIN t2d a
          ON a.person_id = m.person_id AND m.d BETWEEN a.d - 30 AND a.d + 365),
ckd_p AS (SELECT DISTINCT person_id FROM ev
          WHERE concept_id IN ({ids('ckd')}) AND (v IS NULL OR lower(v) = 'snomed') AND NOT negated)
SELECT person_id FROM (
  SELECT person_id FROM t2d_p INTERSECT SELECT person_id FROM met_p
  EXCEPT SELECT person_id FROM ckd_p)
ORDER BY person_id
"""


def main():
    d, params, runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    query = sql(d, params)
    times, ids = [], []
    for _ in range(runs):
        con = duckdb.connect()
        t = time.perf_counter()
        ids = [r[0] for r in con.execute(query).fetchall()]
        times.append(time.perf_counter() - t)
        con.close()
    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    print(json.dumps({
        "version": duckdb.__version__,
        "threads": threads,
        "median_s": statistics.median(times),
        "times_s": times,
        "count": len(ids),
        "ids": ids,
    }))


if __name__ == "__main__":
    main()
