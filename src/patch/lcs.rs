//! The longest-common-subsequence alignment of the middle of two arrays.
//!
//! The classic dynamic programme fills a table `lcs[x][y]` (the LCS length of
//! `a[x..]` and `b[y..]`) and walks it from `(0, 0)`: equal elements are kept,
//! otherwise the left element is deleted unless that shortens the LCS. When
//! one side has at most 64 elements, each row of the table is one 64-bit word
//! computed with the bit-parallel recurrence of Allison–Dix and Hyyrö, and a
//! cell is a popcount: the same table, so the same alignment, for a handful
//! of word operations per row instead of one comparison per cell.
//!
//! The table costs (N+1)·(M+1) cells of time and memory, so it only aligns
//! arrays whose sides (once the common prefix and suffix are off) have at
//! most [`Limits::short`] elements. Longer ones go to the bounded search of
//! `myers.rs` (`align_long`), which gives the same alignment in time linear
//! in N + M when they differ by at most [`Limits::max_edits`] deletions and
//! insertions; past that the caller replaces the whole array.

use serde_json::Value;

use super::Step;
use super::classes::{equality_classes, hashes};
use super::myers;

/// Where the exact alignment stops; see [`LIMITS`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// The longest side aligned by the table whatever the difference.
    pub(super) short: usize,
    /// The most deletions plus insertions the bounded search looks for.
    pub(super) max_edits: usize,
}

/// The bounds of the exact alignment, measured on the shared 2-core dev
/// machine, release build (commands and all figures in docs/diff.md).
///
/// * `short`: 255 elements a side make at most 2^16 table cells, 256 KiB and
///   0.10–0.21 ms (`cargo bench --bench diff`,
///   `diff_255_flags_all_different_full_table`), the most the table may cost
///   for one array. The arrays of the recorded reviews have at most 31
///   elements, so their alignment is the table's whatever changed. Unbounded,
///   the table grew with the product of the lengths: 20,000 flags took 1.6 GB
///   and 2 s, 50,000 asked for 10 GB and aborted the process.
/// * `max_edits`: what a long array may differ by and still get the exact,
///   minimal alignment instead of one `replace` of the whole array. The
///   search costs at most (2·E + 1)·min(N, M) comparisons and keeps
///   (E + 1)(E + 2)/2 words: with E = 64, 17 KiB, and on 50,000 flags the
///   whole diff takes 2.0–3.2 ms at 2 edits and at 64 on one repeated flag,
///   where snakes are longest (`diff_50k_flags_one_moved_to_the_end`,
///   `diff_50k_same_flag_64_edits`); `perf` puts the search at about 12 %
///   of that, hashing the elements at most of the rest. 64 edits are 32
///   replaced flags in one array; a rule changes a few.
pub(super) const LIMITS: Limits = Limits {
    short: 255,
    max_edits: 64,
};

/// The LCS alignment of two non-empty arrays; indices are offset by `prefix`.
///
/// The table compares 64-bit hashes instead of values. The kept pairs are
/// then checked to be equal; should a hash collision have paired unequal
/// elements, the table is redone on exact equality classes.
pub(super) fn align_by_table(am: &[Value], bm: &[Value], prefix: usize) -> Vec<Step> {
    let steps = lcs_steps(&hashes(am), &hashes(bm), prefix);
    if kept_equal(&steps, am, bm) {
        return steps;
    }
    let (ka, kb) = classes(am, bm);
    lcs_steps(&ka, &kb, prefix)
}

/// The table's alignment of two arrays of which one is longer than the
/// table's limit, when they differ by at most `max_edits` deletions and
/// insertions; `None` otherwise. Hashes first, as for the table.
pub(super) fn align_long(
    am: &[Value],
    bm: &[Value],
    prefix: usize,
    max_edits: usize,
) -> Option<Vec<Step>> {
    // Each element of the longer side beyond the shorter's length is an edit.
    if am.len().abs_diff(bm.len()) > max_edits {
        return None;
    }
    // Equal elements have equal hashes, so `None` here holds for the values.
    let steps = myers::steps(&hashes(am), &hashes(bm), prefix, max_edits)?;
    if kept_equal(&steps, am, bm) {
        return Some(steps);
    }
    let (ka, kb) = classes(am, bm);
    myers::steps(&ka, &kb, prefix, max_edits)
}

/// Whether the pairs kept by an alignment on hashes are equal elements.
fn kept_equal(steps: &[Step], am: &[Value], bm: &[Value]) -> bool {
    let (mut x, mut y) = (0, 0);
    let mut equal = true;
    for step in steps {
        match step {
            Step::Keep => {
                equal &= am[x] == bm[y];
                x += 1;
                y += 1;
            }
            Step::Delete(_) => x += 1,
            Step::Insert(_) => y += 1,
        }
    }
    equal
}

/// Exact equality classes of the elements, as keys.
fn classes(am: &[Value], bm: &[Value]) -> (Vec<u64>, Vec<u64>) {
    let (ai, bi) = equality_classes(am, bm);
    let widen = |k: &[u32]| k.iter().map(|&c| u64::from(c)).collect::<Vec<u64>>();
    (widen(&ai), widen(&bi))
}

/// The alignment of the full table, whatever the arrays' length: the test
/// oracle of the other paths.
#[cfg(test)]
pub(super) fn table_steps(ka: &[u64], kb: &[u64], prefix: usize) -> Vec<Step> {
    let table = Table::new(ka, kb);
    walk(ka, kb, prefix, |x, y| table.lcs(x, y))
}

/// The alignment of two sequences of keys standing for the elements.
fn lcs_steps(ka: &[u64], kb: &[u64], prefix: usize) -> Vec<Step> {
    match BitRows::new(ka, kb) {
        Some(rows) => walk(ka, kb, prefix, |x, y| rows.lcs(x, y)),
        None => {
            let table = Table::new(ka, kb);
            walk(ka, kb, prefix, |x, y| table.lcs(x, y))
        }
    }
}

/// Walk the table from `(0, 0)`. Ties prefer deleting before inserting.
fn walk(ka: &[u64], kb: &[u64], prefix: usize, lcs: impl Fn(usize, usize) -> u32) -> Vec<Step> {
    let (n, m) = (ka.len(), kb.len());
    let mut steps = Vec::with_capacity(n + m);
    let (mut x, mut y) = (0, 0);
    while x < n && y < m {
        if ka[x] == kb[y] {
            steps.push(Step::Keep);
            x += 1;
            y += 1;
        } else if lcs(x + 1, y) >= lcs(x, y + 1) {
            steps.push(Step::Delete(prefix + x));
            x += 1;
        } else {
            steps.push(Step::Insert(prefix + y));
            y += 1;
        }
    }
    steps.extend((x..n).map(|x| Step::Delete(prefix + x)));
    steps.extend((y..m).map(|y| Step::Insert(prefix + y)));
    steps
}

/// The table cell by cell.
struct Table {
    cells: Vec<u32>,
    width: usize,
}

impl Table {
    fn new(ka: &[u64], kb: &[u64]) -> Table {
        let (n, m) = (ka.len(), kb.len());
        let width = m + 1;
        let mut cells = vec![0u32; (n + 1) * width];
        for x in (0..n).rev() {
            for y in (0..m).rev() {
                cells[x * width + y] = if ka[x] == kb[y] {
                    cells[(x + 1) * width + y + 1] + 1
                } else {
                    cells[(x + 1) * width + y].max(cells[x * width + y + 1])
                };
            }
        }
        Table { cells, width }
    }

    fn lcs(&self, x: usize, y: usize) -> u32 {
        self.cells[x * self.width + y]
    }
}

/// The table as one word per row, for a right side of at most 64 elements.
///
/// Bit `j` of a row stands for `b[m-1-j]`, so that the row of `x` holds the
/// LCS of `a[x..]` (read backwards) with every suffix `b[y..]` (read
/// backwards, a prefix of the reversed `b`): `lcs[x][y]` is the number of
/// zero bits among the `m - y` lowest bits of the row.
struct BitRows {
    rows: Vec<u64>,
    m: usize,
}

impl BitRows {
    fn new(ka: &[u64], kb: &[u64]) -> Option<BitRows> {
        let (n, m) = (ka.len(), kb.len());
        if m > 64 {
            return None;
        }
        let full = low_bits(m);
        let mut rows = vec![0u64; n + 1];
        let mut v = full;
        rows[n] = v;
        for x in (0..n).rev() {
            let matches = kb
                .iter()
                .rev()
                .enumerate()
                .filter(|(_, k)| **k == ka[x])
                .fold(0u64, |bits, (j, _)| bits | 1 << j);
            let u = v & matches;
            v = (v.wrapping_add(u) | (v - u)) & full;
            rows[x] = v;
        }
        Some(BitRows { rows, m })
    }

    fn lcs(&self, x: usize, y: usize) -> u32 {
        let len = self.m - y;
        len as u32 - (self.rows[x] & low_bits(len)).count_ones()
    }
}

/// A word with the `len` (≤ 64) lowest bits set.
fn low_bits(len: usize) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random key sequences over small alphabets, up to 70 by 64.
    #[test]
    fn bit_rows_are_the_table() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for _ in 0..3000 {
            let alphabet = next(6) + 1;
            let (n, m) = (next(70) as usize + 1, next(64) as usize + 1);
            let ka: Vec<u64> = (0..n).map(|_| next(alphabet)).collect();
            let kb: Vec<u64> = (0..m).map(|_| next(alphabet)).collect();
            let (table, bits) = (Table::new(&ka, &kb), BitRows::new(&ka, &kb).unwrap());
            for x in 0..=n {
                for y in 0..=m {
                    assert_eq!(bits.lcs(x, y), table.lcs(x, y), "{ka:?} {kb:?} at {x},{y}");
                }
            }
        }
        assert!(BitRows::new(&[1], &[0; 65]).is_none());
    }
}
