//! Which rows a shard owns. The input is cut into units of `block_rows` consecutive rows of
//! one file, numbered across the files in sorted order; shard `i` of `N` owns unit `k` when
//! `k mod N = i`. The cut depends only on the files, their row counts and `block_rows`, never
//! on the machine or on timing, so N shards partition the input exactly and a retried shard
//! reads the same rows again.

use std::ops::Range;
use std::str::FromStr;

/// `--shard i/N`: this process's part of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The whole input, as one shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// The file name of this shard's output: a rerun writes the same name.
    pub fn file_name(&self) -> String {
        format!("part-{}-of-{}.parquet", self.index, self.count)
    }

    /// Whether unit `k` (numbered across all files) is this shard's.
    pub fn owns(&self, unit: u64) -> bool {
        unit % self.count == self.index
    }

    /// The row ranges of one file (rows `0..rows`, its first unit numbered `first_unit`) that
    /// this shard owns, adjacent ones merged.
    pub fn owned_rows(&self, first_unit: u64, rows: u64, block_rows: u64) -> Vec<Range<u64>> {
        let mut out: Vec<Range<u64>> = Vec::new();
        let mut start = 0;
        let mut unit = first_unit;
        while start < rows {
            let end = (start + block_rows).min(rows);
            if self.owns(unit) {
                match out.last_mut() {
                    Some(last) if last.end == start => last.end = end,
                    _ => out.push(start..end),
                }
            }
            start = end;
            unit += 1;
        }
        out
    }
}

/// Units a file of `rows` rows is cut into.
pub fn units(rows: u64, block_rows: u64) -> u64 {
    rows.div_ceil(block_rows)
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a shard: expected i/N with 0 <= i < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
        for bad in ["5/5", "0/0", "1", "-1/3", "a/b", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_partition_every_file_exactly() {
        let files = [0u64, 1, 7, 10, 23, 4];
        let block = 3;
        for n in 1..6 {
            let mut seen: Vec<Vec<u32>> = files.iter().map(|&r| vec![0; r as usize]).collect();
            for i in 0..n {
                let shard = Shard { index: i, count: n };
                let mut first = 0;
                for (f, &rows) in files.iter().enumerate() {
                    for r in shard.owned_rows(first, rows, block) {
                        for row in r {
                            seen[f][row as usize] += 1;
                        }
                    }
                    first += units(rows, block);
                }
            }
            assert!(seen.iter().flatten().all(|&c| c == 1), "N={n}: {seen:?}");
        }
    }

    fn one(r: Range<u64>) -> Vec<Range<u64>> {
        vec![r]
    }

    #[test]
    fn units_continue_across_files() {
        let s = Shard { index: 1, count: 2 };
        // File of 5 rows in blocks of 2: units 0,1,2 → this shard owns unit 1 (rows 2..4).
        assert_eq!(s.owned_rows(0, 5, 2), one(2..4));
        // The next file starts at unit 3: owns units 3 and 5 (rows 0..2 and 4..6).
        assert_eq!(s.owned_rows(3, 6, 2), vec![0..2, 4..6]);
        assert_eq!(Shard::ALL.owned_rows(0, 5, 2), one(0..5));
        assert_eq!(s.file_name(), "part-1-of-2.parquet");
    }
}
