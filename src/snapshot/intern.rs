//! String interning: labels, taint keys, images and names become [`Sym`]s once, at load.
//!
//! The per-node path compares `Sym`s (integers), never strings.

use std::sync::Arc;

use ahash::AHashMap;

/// An interned string. Valid for the [`Interner`] that produced it, for the life of that interner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

impl Default for Sym {
    /// `Sym::NONE`.
    fn default() -> Self {
        Sym::NONE
    }
}

impl Sym {
    /// "No value": the label is absent on this node.
    pub const NONE: Sym = Sym(u32::MAX);

    pub fn is_none(self) -> bool {
        self == Sym::NONE
    }
}

/// Owns interned strings. Append-only: a `Sym` never changes meaning.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    /// One allocation per string, shared by the map and the list.
    ids: AHashMap<Arc<str>, u32>,
    strs: Vec<Arc<str>>,
    /// `strs[i]` parsed as a base-10 `i64`, for `Gt`/`Lt` label requirements.
    ints: Vec<Option<i64>>,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&id) = self.ids.get(s) {
            return Sym(id);
        }
        let id = u32::try_from(self.strs.len()).expect("fewer than 2^32 - 1 distinct strings");
        assert!(id != u32::MAX, "interner is full");
        let owned: Arc<str> = Arc::from(s);
        self.ids.insert(owned.clone(), id);
        self.strs.push(owned);
        self.ints.push(s.parse::<i64>().ok());
        Sym(id)
    }

    /// The `Sym` of `s` if it was interned before; never inserts.
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.ids.get(s).map(|&id| Sym(id))
    }

    /// The string behind `sym`. Panics on `Sym::NONE`.
    pub fn resolve(&self, sym: Sym) -> &str {
        &self.strs[sym.0 as usize]
    }

    /// The string behind `sym`, shared (no copy). Panics on `Sym::NONE`.
    pub fn resolve_shared(&self, sym: Sym) -> Arc<str> {
        self.strs[sym.0 as usize].clone()
    }

    /// The string behind `sym` parsed as an integer (label values for `Gt`/`Lt`).
    pub fn as_int(&self, sym: Sym) -> Option<i64> {
        if sym.is_none() {
            return None;
        }
        self.ints[sym.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.strs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_parses_integers() {
        let mut i = Interner::new();
        let a = i.intern("zone");
        let b = i.intern("42");
        assert_eq!(i.intern("zone"), a);
        assert_ne!(a, b);
        assert_eq!(i.resolve(a), "zone");
        assert_eq!(i.as_int(b), Some(42));
        assert_eq!(i.as_int(a), None);
        assert_eq!(i.as_int(Sym::NONE), None);
        assert_eq!(i.get("nope"), None);
    }
}
