//! Reading a list whose strings lie scattered over the heap, a batch at a time.
//!
//! A runtime's answer is decoded string by string, so a recorded node's ids lie wherever the
//! allocator found room: reading a container's strings is a cache miss each (and, on a large
//! node, a TLB miss), and a pass that files one container at a time waits for them one after
//! another, because each container's work fills the processor's window before the next
//! container's loads are issued. [`fetched`] first loads one byte of each line a batch's
//! strings begin and end on, in a loop so short that the loads of many containers are in
//! flight together, and then hands the batch over with its strings in cache.

/// Items per batch: their strings (up to 20 KiB for five 64-byte ids a container) stay in
/// the first-level cache until they are read, and the fetch loop keeps the processor's
/// outstanding misses busy.
const BATCH: usize = 32;

/// `items` in order, each batch's `strings` fetched before its first item is yielded.
pub(crate) fn fetched<'a, T, const N: usize>(
    items: &'a [T],
    strings: impl Fn(&'a T) -> [&'a str; N],
) -> impl Iterator<Item = &'a T> {
    items.chunks(BATCH).flat_map(move |batch| {
        fetch(batch.iter().flat_map(&strings));
        batch
    })
}

/// Loads the first and last byte of each string (a 64-byte id spans two cache lines unless
/// it starts on one's boundary). The bytes are folded together and the fold is kept opaque to
/// the compiler, so the loads are not optimised away; no result of them is used.
fn fetch<'a>(strings: impl Iterator<Item = &'a str>) {
    let fold = strings.fold(0u8, |fold, s| {
        let b = s.as_bytes();
        match (b.first(), b.last()) {
            (Some(&first), Some(&last)) => fold ^ first ^ last,
            _ => fold,
        }
    });
    std::hint::black_box(fold);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_yielded_once_in_order() {
        let items: Vec<String> = (0..100).map(|i| format!("id-{i}")).collect();
        let seen: Vec<&String> = fetched(&items, |s| [s.as_str(), ""]).collect();
        assert_eq!(seen, items.iter().collect::<Vec<_>>());
        assert_eq!(fetched(&items[..0], |s| [s.as_str()]).count(), 0);
    }
}
