//! Row bitsets: one bit per node row, 64 rows per `u64` word (row `i` is bit `i % 64` of word
//! `i / 64`). A vector may be shorter than the rows need: missing words read as zero, so a set
//! that holds few rows need not grow with every node added. Kept beside the columns they
//! summarise ([`super::NodeTable`]'s hard-taint rows, [`super::pod_index::QueryCounter`]'s
//! occupied rows) and read 64 rows at a time by the plugins.

use super::nodes::NodeIdx;

/// Words needed for `rows` rows.
#[inline]
pub fn words_for(rows: usize) -> usize {
    rows.div_ceil(64)
}

/// Word `w` of `bits` (0 past its end).
#[inline]
pub fn word(bits: &[u64], w: usize) -> u64 {
    bits.get(w).copied().unwrap_or(0)
}

/// Whether row `i` is set.
#[inline]
pub fn get(bits: &[u64], i: usize) -> bool {
    word(bits, i / 64) >> (i % 64) & 1 != 0
}

/// Sets row `i` to `v` (grows the vector only to set a bit).
#[inline]
pub fn set(bits: &mut Vec<u64>, i: usize, v: bool) {
    let w = i / 64;
    if w >= bits.len() {
        if !v {
            return;
        }
        bits.resize(w + 1, 0);
    }
    let m = 1u64 << (i % 64);
    if v {
        bits[w] |= m;
    } else {
        bits[w] &= !m;
    }
}

/// Row `last` (the table's last row) moved into row `i` and the table shrank by one, as
/// `Vec::swap_remove(i)` does to a column: row `i` takes row `last`'s bit, row `last` is cleared.
#[inline]
pub fn swap_remove(bits: &mut Vec<u64>, i: usize, last: usize) {
    let b = get(bits, last);
    set(bits, last, false);
    if i != last {
        set(bits, i, b);
    }
}

/// The mask of the rows below `rows` in word `w`.
#[inline]
pub fn valid_mask(rows: usize, w: usize) -> u64 {
    let lo = w * 64;
    if rows >= lo + 64 {
        u64::MAX
    } else if rows <= lo {
        0
    } else {
        (1u64 << (rows - lo)) - 1
    }
}

/// Appends the set rows of `words` (bits of word `w` are rows `64 w ..`) to `out` in row order:
/// O(words + result).
#[inline]
pub fn push_ones(words: &[u64], out: &mut Vec<NodeIdx>) {
    for (w, &word) in words.iter().enumerate() {
        let mut b = word;
        while b != 0 {
            let t = b.trailing_zeros();
            out.push(NodeIdx((w * 64) as u32 + t));
            b &= b - 1;
        }
    }
}

/// The bitset of the rows below `rows` for which `f(row)` holds (the reference the incremental
/// sets are tested against, and how a set is built the first time).
pub fn from_fn(rows: usize, mut f: impl FnMut(usize) -> bool) -> Vec<u64> {
    let mut bits = vec![0u64; words_for(rows)];
    for (i, b) in (0..rows).map(|i| (i, f(i))) {
        if b {
            bits[i / 64] |= 1u64 << (i % 64);
        }
    }
    bits
}

/// `bits` with trailing zero words dropped (two sets hold the same rows iff their trimmed forms
/// are equal).
pub fn trimmed(bits: &[u64]) -> &[u64] {
    let end = bits.iter().rposition(|&w| w != 0).map_or(0, |p| p + 1);
    &bits[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn valid_mask_table() {
        for (rows, w, want) in [(0, 0, 0), (1, 0, 1), (64, 0, u64::MAX), (65, 1, 1), (64, 1, 0), (130, 1, u64::MAX)] {
            assert_eq!(valid_mask(rows, w), want, "rows {rows} word {w}");
        }
    }

    proptest! {
        /// `set` / `swap_remove` on a bitset equal the same operations on a `Vec<bool>` column.
        #[test]
        fn bitset_ops_are_a_bool_column(ops in proptest::collection::vec((0u8..3, 0usize..200, any::<bool>()), 0..120)) {
            let mut col: Vec<bool> = Vec::new();
            let mut bits: Vec<u64> = Vec::new();
            for (op, i, v) in ops {
                match op {
                    0 => {
                        col.push(v);
                        set(&mut bits, col.len() - 1, v);
                    }
                    1 if !col.is_empty() => {
                        let i = i % col.len();
                        col[i] = v;
                        set(&mut bits, i, v);
                    }
                    _ if !col.is_empty() => {
                        let i = i % col.len();
                        let last = col.len() - 1;
                        col.swap_remove(i);
                        swap_remove(&mut bits, i, last);
                    }
                    _ => {}
                }
                let want = from_fn(col.len(), |r| col[r]);
                prop_assert_eq!(trimmed(&bits), trimmed(&want));
                let mut ones = Vec::new();
                push_ones(&bits, &mut ones);
                let want_ones: Vec<NodeIdx> = (0..col.len()).filter(|&r| col[r]).map(|r| NodeIdx(r as u32)).collect();
                prop_assert_eq!(ones, want_ones);
            }
        }
    }
}
