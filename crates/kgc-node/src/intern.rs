//! Numbering many strings at once, so that equal strings get equal numbers: how a pass joins
//! containers to their pods, sandboxes and images by id.
//!
//! A hash map would do it with one probe per string, but a runtime lists its containers in no
//! particular order, so over 100,000 containers each probe lands somewhere random in tables
//! and key bytes of tens of megabytes: a cache and TLB miss per lookup, and planning time that
//! grows much faster than the node. Instead each string is hashed as it is read and copied,
//! with its hash, to one of a few partitions by the hash's top bits (writes that stream); then
//! each partition is numbered on its own, its table and bytes small enough to stay in cache
//! (a radix-partitioned hash join). Equal hashes are confirmed by comparing the bytes:
//! numbers are exact, never a guess.

use std::hash::BuildHasher;

use crate::Error;
use crate::hash::FxBuild;

/// Strings per partition: a partition's table and bytes (a few megabytes) stay in the
/// last-level cache while it is numbered. Fewer, larger partitions measured faster than
/// L2-sized ones: each partition is a write stream while strings are added, and the
/// prefetchers follow only a few dozen streams.
const PER_PARTITION: usize = 32_768;
/// Partitions at most, for the same reason.
const MAX_PARTITIONS: usize = 16;

/// Longest string length a partition reserves room for (ids are up to 71 bytes).
const MAX_RESERVED_LEN: usize = 128;

/// Collects string occurrences; [`Interner::finish`] numbers them.
pub(crate) struct Interner {
    /// Partition bits: a hash's top `bits` bits pick its partition.
    bits: u32,
    /// About how many strings each partition gets.
    per_part: usize,
    parts: Vec<Part>,
    len: usize,
    /// Occurrences at most (the capacity asked for; at most `u32::MAX`).
    limit: usize,
}

/// The strings of one partition, in push order.
struct Part {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

/// 16 bytes, and a slot 12: the entries and tables of a large node are streamed and probed
/// in every numbering, and their size is most of a pass's memory traffic.
#[derive(Clone, Copy)]
struct Entry {
    /// Where the string ends in its partition's `bytes` (it starts where the previous one
    /// ends).
    end: usize,
    /// The hash's low half (its top bits picked the partition, so they are the same for all
    /// of a partition's strings).
    hash: u32,
    occurrence: u32,
}

/// One slot of a partition's table: the first occurrence of a distinct string.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    /// The entry (in the partition) of the string's first occurrence; `u32::MAX`: empty.
    entry: u32,
    number: u32,
}

const EMPTY: Slot = Slot {
    hash: 0,
    entry: u32::MAX,
    number: 0,
};

/// An interner's numbers.
pub(crate) struct Interned {
    /// By occurrence: the number of its string.
    numbers: Vec<u32>,
    /// By number: the first occurrence of its string.
    first: Vec<u32>,
}

impl Interner {
    /// An interner for at most `n` occurrences. Numbers and occurrences are 32-bit (half the
    /// memory of `usize` in every table), so `n` is refused above `u32::MAX`: no node lists
    /// four billion objects, but a plan must say so rather than number them wrong.
    pub(crate) fn with_capacity(n: usize) -> Result<Self, Error> {
        if u32::try_from(n).is_err() {
            return Err(Error::Snapshot(format!(
                "{n} ids to match: more than the {} a pass can number",
                u32::MAX
            )));
        }
        let partitions = (n / PER_PARTITION)
            .clamp(1, MAX_PARTITIONS)
            .next_power_of_two();
        let per_part = n / partitions + n / partitions / 8 + 16;
        Ok(Interner {
            bits: partitions.trailing_zeros(),
            per_part,
            parts: (0..partitions)
                .map(|_| Part {
                    bytes: Vec::new(),
                    entries: Vec::with_capacity(per_part),
                })
                .collect(),
            len: 0,
            limit: n,
        })
    }

    /// Adds an occurrence of `s`, numbered in push order from zero. At most the capacity's
    /// number of occurrences may be pushed.
    pub(crate) fn push(&mut self, s: &str) -> usize {
        debug_assert!(self.len < self.limit, "more occurrences than reserved");
        let hash = FxBuild::default().hash_one(s);
        // The top bits pick the partition; the table within it uses the low ones.
        let part = hash.checked_shr(64 - self.bits).unwrap_or(0);
        let part = &mut self.parts[usize::try_from(part).unwrap_or(0)];
        if part.bytes.capacity() == 0 {
            // The ids of one kind mostly have one length (64 hex digits, a UUID): room for
            // the partition's share at the first one's length spares most regrowth. Capped,
            // so that one absurdly long string cannot ask for gigabytes up front.
            let len = s.len().min(MAX_RESERVED_LEN);
            part.bytes.reserve(self.per_part.saturating_mul(len + 1));
        }
        part.bytes.extend_from_slice(s.as_bytes());
        part.entries.push(Entry {
            end: part.bytes.len(),
            hash: hash as u32,
            occurrence: u32::try_from(self.len).unwrap_or(u32::MAX),
        });
        self.len += 1;
        self.len - 1
    }

    /// Numbers the occurrences: equal strings, equal numbers; numbers are dense from zero.
    pub(crate) fn finish(self) -> Interned {
        let mut numbers = vec![0; self.len];
        let mut first: Vec<u32> = Vec::new();
        let mut slots = Vec::new();
        for part in &self.parts {
            let len = (part.entries.len() * 2).max(8).next_power_of_two();
            slots.clear();
            slots.resize(len, EMPTY);
            let mask = len - 1;
            for (k, e) in (0u32..).zip(&part.entries) {
                let bytes = part.string(k);
                let mut at = e.hash as usize & mask;
                let number = loop {
                    let slot: Slot = slots[at];
                    if slot.entry == u32::MAX {
                        // Fewer distinct strings than occurrences, so this fits.
                        let number = u32::try_from(first.len()).unwrap_or(u32::MAX);
                        slots[at] = Slot {
                            hash: e.hash,
                            entry: k,
                            number,
                        };
                        first.push(e.occurrence);
                        break number;
                    }
                    if slot.hash == e.hash && part.string(slot.entry) == bytes {
                        break slot.number;
                    }
                    at = (at + 1) & mask;
                };
                numbers[e.occurrence as usize] = number;
            }
        }
        Interned { numbers, first }
    }
}

impl Part {
    fn string(&self, k: u32) -> &[u8] {
        let k = k as usize;
        let start = k.checked_sub(1).map_or(0, |j| self.entries[j].end);
        &self.bytes[start..self.entries[k].end]
    }
}

impl Interned {
    /// The number of occurrence `occurrence`'s string.
    pub(crate) fn number(&self, occurrence: usize) -> usize {
        self.numbers[occurrence] as usize
    }

    /// How many occurrences were numbered.
    pub(crate) fn len(&self) -> usize {
        self.numbers.len()
    }

    /// How many distinct strings there are.
    pub(crate) fn distinct(&self) -> usize {
        self.first.len()
    }

    /// For occurrences `0..listed` (a list of ids, pushed first), whether a later occurrence
    /// (a reference, pushed in order from `listed`) for which `holds(reference index)` names
    /// the same string.
    pub(crate) fn listed_held(&self, listed: usize, holds: impl Fn(usize) -> bool) -> Vec<bool> {
        let mut held = vec![false; self.distinct()];
        for k in (listed..self.len()).filter(|&k| holds(k - listed)) {
            held[self.numbers[k] as usize] = true;
        }
        (0..listed.min(self.len()))
            .map(|k| held[self.numbers[k] as usize])
            .collect()
    }

    /// The first of occurrences `0..n` whose string an earlier one of them already had.
    pub(crate) fn first_repeat(&self, n: usize) -> Option<usize> {
        (0..n.min(self.len())).find(|&k| self.first[self.numbers[k] as usize] as usize != k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a map from string to first occurrence: numbers are equal exactly when the
        /// strings are, dense, and `first_repeat` agrees. A small alphabet with NUL makes
        /// repeats, prefixes and Fx collisions (`"a"`, `"a\0"`) common; the capacity hint
        /// spreads few strings over up to 16 partitions.
        #[test]
        fn numbers_are_equal_exactly_when_strings_are(
            strings in proptest::collection::vec("[ab\\x00]{0,5}", 0..300),
            hint in 0usize..1_000_000,
            n in 0usize..320,
        ) {
            let mut interner = Interner::with_capacity(hint.max(strings.len())).expect("fits");
            for s in &strings {
                interner.push(s);
            }
            let interned = interner.finish();
            let mut first: std::collections::HashMap<&str, usize> = Default::default();
            let mut number_of: std::collections::HashMap<usize, &str> = Default::default();
            for (k, s) in strings.iter().enumerate() {
                let f = *first.entry(s).or_insert(k);
                let number = interned.number(k);
                prop_assert!(number < interned.distinct());
                prop_assert_eq!(interned.number(f), number);
                prop_assert_eq!(*number_of.entry(number).or_insert(s), s.as_str());
            }
            prop_assert_eq!(interned.distinct(), first.len());
            let naive = (0..n.min(strings.len())).find(|&k| first[strings[k].as_str()] != k);
            prop_assert_eq!(interned.first_repeat(n), naive);
        }
    }

    #[test]
    fn equal_strings_and_only_they_share_a_number() {
        // Enough strings for many partitions, each several times.
        let strings: Vec<String> = (0..300_000)
            .map(|i| format!("id-{}", i % 100_000))
            .collect();
        let mut interner = Interner::with_capacity(strings.len()).expect("fits");
        for (k, s) in strings.iter().enumerate() {
            assert_eq!(interner.push(s), k);
        }
        let interned = interner.finish();
        assert_eq!(interned.distinct(), 100_000);
        let mut string_of = vec![None; interned.distinct()];
        for (k, s) in strings.iter().enumerate() {
            let n = interned.number(k);
            assert_eq!(*string_of[n].get_or_insert(s), s, "number {n}");
        }
        assert_eq!(interned.first_repeat(100_000), None);
        assert_eq!(interned.first_repeat(100_001), Some(100_000));
    }

    #[test]
    fn one_long_string_does_not_reserve_room_for_its_partition_at_its_length() {
        // Sized for a million occurrences, a partition reserving at this string's length
        // would ask for some 65 GB and abort the process.
        let mut interner = Interner::with_capacity(1_000_000).expect("fits");
        let long = "x".repeat(1 << 20);
        interner.push(&long);
        interner.push("short");
        interner.push(&long);
        let interned = interner.finish();
        assert_eq!(interned.distinct(), 2);
        assert_eq!(interned.first_repeat(3), Some(2));
    }

    #[test]
    fn more_occurrences_than_32_bits_number_are_refused_up_front() {
        let err = Interner::with_capacity(u32::MAX as usize + 1)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("4294967296 ids to match"), "{err}");
    }

    #[test]
    fn the_empty_string_and_prefixes_are_strings_of_their_own() {
        let mut interner = Interner::with_capacity(5).expect("fits");
        for s in ["", "a", "ab", "", "a"] {
            interner.push(s);
        }
        let interned = interner.finish();
        assert_eq!(interned.distinct(), 3);
        assert_eq!(interned.number(0), interned.number(3));
        assert_eq!(interned.number(1), interned.number(4));
        assert_ne!(interned.number(1), interned.number(2));
        assert_eq!(interned.first_repeat(5), Some(3));
    }
}
