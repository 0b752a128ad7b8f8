//! `scion::patch::diff` of long arrays: a container `command` of 50,000 flags
//! with the flag the webhook moves (`--allocate-node-cidrs=true`) moved to the
//! end, shuffled, and reversed — the attack that made the full LCS table
//! allocate 10 GB — plus the worst cases each bound of `src/patch/lcs.rs`
//! admits, the figures its constants are chosen by (docs/diff.md).
//!
//! ```text
//! cargo bench --bench diff
//! ```

/// The allocator of the `scion` binary (src/main.rs), so the figures are its.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const FLAGS: usize = 50_000;

fn flag(i: usize) -> Value {
    json!(format!("--flag-{i}=x"))
}

/// A pseudo-random permutation with a fixed seed.
fn shuffle(items: &mut [Value]) {
    let mut seed = 11u64;
    for i in (1..items.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        items.swap(i, (seed >> 33) as usize % (i + 1));
    }
}

fn command(items: Vec<Value>) -> Value {
    json!({"command": items})
}

fn bench(c: &mut Criterion) {
    let moved = json!("--allocate-node-cidrs=true");
    let mut before = vec![
        json!("/usr/local/bin/kube-controller-manager"),
        moved.clone(),
    ];
    before.extend((0..FLAGS).map(flag));

    let mut after = before.clone();
    after.remove(1);
    after.push(moved);
    let cases = [
        ("diff_50k_flags_one_moved_to_the_end", after),
        ("diff_50k_flags_shuffled", {
            let mut after = before.clone();
            shuffle(&mut after[1..]);
            after
        }),
        ("diff_50k_flags_reversed", {
            let mut after = before.clone();
            after[1..].reverse();
            after
        }),
    ];
    let before_value = command(before);
    for (name, after) in cases {
        let after = command(after);
        c.bench_function(name, |b| {
            b.iter(|| scion::patch::diff(&before_value, std::hint::black_box(&after)))
        });
    }

    // The bounded search at its 64 edits, where snakes are longest: one flag
    // repeated, the first and the last 31 replaced, so that once past the
    // last ones every diagonal's snake runs along the whole array.
    let same = vec![flag(0); FLAGS];
    let mut edited = same.clone();
    edited[0] = json!("--edited");
    for (k, f) in edited[FLAGS - 31..].iter_mut().enumerate() {
        *f = json!(format!("--edited-{k}"));
    }
    let (same, edited) = (command(same), command(edited));
    c.bench_function("diff_50k_same_flag_64_edits", |b| {
        b.iter(|| scion::patch::diff(&same, std::hint::black_box(&edited)))
    });

    // The largest full table (255 by 255 elements, 2^16 cells) with every
    // element different: what the table bound lets one array cost.
    let left: Vec<Value> = (0..255).map(flag).collect();
    let right: Vec<Value> = (255..510).map(flag).collect();
    let (left, right) = (command(left), command(right));
    c.bench_function("diff_255_flags_all_different_full_table", |b| {
        b.iter(|| scion::patch::diff(&left, std::hint::black_box(&right)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
