//! The alignment's paths against the full LCS table, and the diff's contract
//! on generated arrays: short and long, with few and many distinct elements,
//! edited here and there, one element moved to the end, rotated, reversed,
//! shuffled, unrelated.
//!
//! * The bounded search (`myers.rs`) finds an alignment exactly when the
//!   table's has at most `max_edits` edits, and then the table's.
//! * `align` is the table's alignment (after the common prefix and suffix)
//!   when the middle's sides have at most `short` elements or it differs by
//!   at most `max_edits`; otherwise `None`, and the whole array is replaced.
//!   Checked with the real limits and with small random ones, which reach
//!   every path on short arrays.
//! * The patch applies (`json_patch::patch`) and yields the target, and the
//!   same input gives the same patch.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::lcs::{LIMITS, Limits, table_steps};
use super::tests::table_alignment;
use super::{Step, align, align_within, diff, myers};

/// A small deterministic random source for the shapes below.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

/// How the right array is made from the left one.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Up to this many elements deleted, inserted or replaced at random places.
    Edits(usize),
    /// Up to this many elements inserted (only).
    Grown(usize),
    /// Up to this many elements deleted (only).
    Shrunk(usize),
    /// One element moved to the end, as the webhook moves a flag.
    Moved,
    Rotated,
    Reversed,
    Shuffled,
    /// A fresh array of the same kind.
    Unrelated,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        4 => (0..12usize).prop_map(Shape::Edits),
        1 => (12..120usize).prop_map(Shape::Edits),
        1 => (0..50usize).prop_map(Shape::Grown),
        1 => (0..50usize).prop_map(Shape::Shrunk),
        2 => Just(Shape::Moved),
        1 => Just(Shape::Rotated),
        1 => Just(Shape::Reversed),
        1 => Just(Shape::Shuffled),
        1 => Just(Shape::Unrelated),
    ]
}

/// Array lengths: mostly those of a pod spec, some past the 64 elements of
/// the bit-parallel rows and the 255 of the table, a few long ones.
fn length(long: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0..70usize,
        3 => 60..320usize,
        1 => 300..long.max(301),
    ]
}

/// Keys for the alignment of key sequences: `alphabet` distinct ones.
fn key_pair(long: usize) -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (length(long), 1..40usize, shape(), any::<u64>()).prop_map(|(len, alphabet, shape, seed)| {
        let mut rng = Rng(seed);
        let a: Vec<u64> = (0..len).map(|_| rng.below(alphabet) as u64).collect();
        let b = reshape(&a, shape, &mut rng, |rng| rng.below(alphabet + 2) as u64);
        (a, b)
    })
}

fn reshape<T: Clone>(
    a: &[T],
    shape: Shape,
    rng: &mut Rng,
    mut fresh: impl FnMut(&mut Rng) -> T,
) -> Vec<T> {
    let mut b = a.to_vec();
    match shape {
        Shape::Edits(count) => {
            for _ in 0..count {
                let at = rng.below(b.len() + 1);
                match rng.below(3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 if at < b.len() => b[at] = fresh(rng),
                    _ => b.insert(at, fresh(rng)),
                }
            }
        }
        Shape::Grown(count) => {
            for _ in 0..count {
                let at = rng.below(b.len() + 1);
                b.insert(at, fresh(rng));
            }
        }
        Shape::Shrunk(count) => {
            for _ in 0..count.min(b.len()) {
                b.remove(rng.below(b.len()));
            }
        }
        Shape::Moved if !b.is_empty() => {
            let moved = b.remove(rng.below(b.len()));
            b.push(moved);
        }
        Shape::Rotated if !b.is_empty() => {
            let by = rng.below(b.len());
            b.rotate_left(by);
        }
        Shape::Reversed => b.reverse(),
        Shape::Shuffled => {
            for i in (1..b.len()).rev() {
                b.swap(i, rng.below(i + 1));
            }
        }
        Shape::Unrelated => b = (0..a.len() + rng.below(8)).map(|_| fresh(rng)).collect(),
        Shape::Moved | Shape::Rotated => {}
    }
    b
}

/// JSON arrays of flags and containers from a pool of `alphabet` elements,
/// reshaped.
fn value_pair(long: usize) -> impl Strategy<Value = (Vec<Value>, Vec<Value>)> {
    (length(long), 1..60usize, shape(), any::<u64>()).prop_map(|(len, alphabet, shape, seed)| {
        let element = move |rng: &mut Rng| {
            let i = rng.below(alphabet);
            match i % 5 {
                0 => json!({"name": format!("c{}", i % 7), "args": [format!("--v={i}")]}),
                1 => json!(i),
                _ => json!(format!("--flag-{i}=x")),
            }
        };
        let mut rng = Rng(seed);
        let a: Vec<Value> = (0..len).map(|_| element(&mut rng)).collect();
        let b = reshape(&a, shape, &mut rng, element);
        (a, b)
    })
}

fn limits() -> impl Strategy<Value = Limits> {
    (0..300usize, 0..40usize).prop_map(|(short, max_edits)| Limits { short, max_edits })
}

fn edits(steps: &[Step]) -> usize {
    steps.iter().filter(|s| **s != Step::Keep).count()
}

/// What `align_within` must give: the table's alignment after the common
/// prefix and suffix when the middle's sides are short or it differs by at
/// most `max_edits`, else `None` (the whole array is replaced).
fn expected(a: &[Value], b: &[Value], limits: Limits) -> Option<Vec<Step>> {
    let (prefix, suffix) = super::common_ends(a, b);
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let table = table_alignment(am, bm, prefix);
    if am.len().max(bm.len()) > limits.short && edits(&table) > limits.max_edits {
        return None;
    }
    let mut steps = vec![Step::Keep; prefix];
    steps.extend(table);
    steps.extend(std::iter::repeat_n(Step::Keep, suffix));
    Some(steps)
}

/// 256 cases per property, or `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn the_bounded_search_walks_the_table((ka, kb) in key_pair(600), max_edits in 0..80usize) {
        prop_assume!(!ka.is_empty() && !kb.is_empty());
        let table = table_steps(&ka, &kb, 3);
        match myers::steps(&ka, &kb, 3, max_edits) {
            Some(steps) => prop_assert_eq!(steps, table),
            None => prop_assert!(edits(&table) > max_edits, "gave up at {} edits", edits(&table)),
        }
    }

    #[test]
    fn align_is_the_table_within_the_limits((a, b) in value_pair(400), limits in limits()) {
        prop_assert_eq!(align_within(&a, &b, limits), expected(&a, &b, limits));
        prop_assert_eq!(align(&a, &b), expected(&a, &b, LIMITS));
    }

    /// The edit bound exactly: with `short: 0` every middle goes to the
    /// bounded search, which aligns it when it differs by `max_edits` and
    /// not when by one more.
    #[test]
    fn the_edit_bound_is_exact((a, b) in value_pair(400), slack in 0..3usize) {
        let unbounded = Limits { short: usize::MAX, max_edits: 0 };
        let table = expected(&a, &b, unbounded).expect("the table aligns any middle");
        let d = edits(&table);
        let limits = Limits { short: 0, max_edits: (d + slack).saturating_sub(1) };
        let aligned = slack > 0 || d == 0;
        prop_assert_eq!(align_within(&a, &b, limits), aligned.then_some(table));
    }

    #[test]
    fn the_patch_gives_the_target((a, b) in value_pair(3000), nested in any::<bool>()) {
        let wrap = |items: Vec<Value>| if nested {
            json!({"spec": {"containers": [{"name": "c", "command": items}]}})
        } else {
            Value::Array(items)
        };
        let (before, after) = (wrap(a), wrap(b));
        let patch = diff(&before, &after);
        let mut applied = before.clone();
        json_patch::patch(&mut applied, &patch.0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&applied, &after);
        prop_assert_eq!(patch, diff(&before, &after));
    }
}
