//! The table walk's alignment without the table, for long arrays that differ
//! by few edits.
//!
//! The LCS table of two long arrays is too big to build (two arrays of 50,000
//! elements make 10 GB), but the walk only ever asks whether deleting the left
//! element keeps a longest common subsequence. With `dist(x, y)`, the number
//! of deletions and insertions that turn `a[x..]` into `b[y..]`,
//! `lcs(x + 1, y) >= lcs(x, y + 1)` is `dist(x + 1, y) <= dist(x, y + 1)`:
//! at a mismatch one of the two is `dist(x, y) - 1` and the other one more,
//! so the walk deletes exactly when `dist(x + 1, y) = dist(x, y) - 1`.
//!
//! Along a diagonal (`x - y` fixed) `dist` never grows as `x` grows, so the
//! points with `dist <= d` on a diagonal are those from some least `x` on.
//! Myers' greedy search ("An O(ND) difference algorithm", 1986), run
//! backwards from the end of both arrays, finds that least `x` for every
//! `d` up to `D = dist(0, 0)` on the `2d + 1` diagonals around the end's one,
//! in O((N + M)·D) time. Keeping those fronts (`(D + 1)(D + 2) / 2` numbers)
//! answers every question of the walk in O(1), so the walk, and the
//! alignment, are exactly the table's — with no table.
//!
//! The search stops after `max_edits` edits: the fronts then stay small and
//! the time linear in N + M, and the caller replaces the whole array.

use super::Step;

/// No point of the diagonal is within the front's distance (the diagonal
/// lies outside the grid).
const NONE: isize = isize::MAX;

/// The alignment of the table walk for two key sequences, or `None` when
/// they differ by more than `max_edits` deletions and insertions.
pub(super) fn steps(ka: &[u64], kb: &[u64], prefix: usize, max_edits: usize) -> Option<Vec<Step>> {
    Fronts::search(ka, kb, max_edits).map(|fronts| fronts.walk(ka, kb, prefix))
}

/// For each `d` up to `dist(0, 0)` and each diagonal `k = x - y` with
/// `k - delta` in `-d, -d + 2, .., d` (the others hold no point at distance
/// `d` or less that is not also at `d - 1`, by parity), the least `x` on
/// the diagonal with `dist(x, x - k) <= d`.
struct Fronts {
    least: Vec<isize>,
    /// `n - m`, the diagonal of the end `(n, m)`.
    delta: isize,
    /// `dist(0, 0)`.
    edits: usize,
}

impl Fronts {
    fn search(ka: &[u64], kb: &[u64], max_edits: usize) -> Option<Fronts> {
        let (n, m) = (ka.len() as isize, kb.len() as isize);
        let delta = n - m;
        let mut least: Vec<isize> = Vec::new();
        for d in 0..=max_edits {
            // Front `d - 1` starts `d` entries before front `d`.
            let previous = least.len().saturating_sub(d);
            for i in 0..=d {
                let k = delta - d as isize + 2 * i as isize;
                let (lo, hi) = (k.max(0), n.min(m + k));
                if lo > hi {
                    least.push(NONE);
                    continue;
                }
                let mut x = if d == 0 {
                    n
                } else {
                    // Diagonal k + 1 is entry i of front d - 1: a point there
                    // at distance d - 1 is one deletion after (x - 1, y).
                    let delete = if i < d { least[previous + i] } else { NONE };
                    // Diagonal k - 1 is entry i - 1: one insertion after (x, y).
                    let insert = if i > 0 { least[previous + i - 1] } else { NONE };
                    let from_delete = if delete == NONE { NONE } else { delete - 1 };
                    // A diagonal in the grid has a neighbour in it (unless
                    // both arrays are empty), and a start before the
                    // diagonal's first point is that point (one edit away
                    // from the neighbour all the same).
                    from_delete.min(insert).max(lo)
                };
                debug_assert!(x <= hi, "front {d} left the grid on diagonal {k}");
                let mut y = x - k;
                while x > 0 && y > 0 && ka[x as usize - 1] == kb[y as usize - 1] {
                    x -= 1;
                    y -= 1;
                }
                least.push(x);
                if x == 0 && y == 0 {
                    return Some(Fronts {
                        least,
                        delta,
                        edits: d,
                    });
                }
            }
        }
        None
    }

    /// Whether `dist(x, x - k) <= d`.
    fn within(&self, d: usize, k: isize, x: isize) -> bool {
        let offset = k - self.delta + d as isize;
        if offset < 0 || offset > 2 * d as isize || offset % 2 != 0 {
            return false;
        }
        let least = self.least[d * (d + 1) / 2 + offset as usize / 2];
        least != NONE && x >= least
    }

    /// The table walk from `(0, 0)`: keep equal elements, else delete when
    /// that stays on a shortest edit path, else insert.
    fn walk(&self, ka: &[u64], kb: &[u64], prefix: usize) -> Vec<Step> {
        let (n, m) = (ka.len(), kb.len());
        // (n + m + D) / 2 steps: the kept pairs and the D edits.
        let mut steps = Vec::with_capacity((n + m + self.edits) / 2);
        let (mut x, mut y) = (0, 0);
        // dist(x, y), from dist(0, 0): each edit of a shortest path lowers it by one.
        let mut edits = self.edits;
        while x < n && y < m {
            if ka[x] == kb[y] {
                steps.push(Step::Keep);
                x += 1;
                y += 1;
                continue;
            }
            // A mismatch is at least one edit from the end.
            edits -= 1;
            if self.within(edits, x as isize + 1 - y as isize, x as isize + 1) {
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
}
