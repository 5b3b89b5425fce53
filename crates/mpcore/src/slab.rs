//! The endpoint's connections by index: slots reused once a connection is forgotten, each
//! with a generation so that a handle to a forgotten connection never reaches the one that
//! took its slot (issue 19: memory follows the connections alive, not every one ever made).

/// Values by index, with reuse and generations.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    entries: Vec<Entry<T>>,
    /// Indexes of empty entries, reused last-freed first.
    free: Vec<usize>,
    live: usize,
}

#[derive(Debug)]
struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self { entries: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Stores `v`; returns its index and generation.
    pub(crate) fn insert(&mut self, v: T) -> (usize, u32) {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                let e = &mut self.entries[i];
                e.value = Some(v);
                (i, e.generation)
            }
            None => {
                self.entries.push(Entry { generation: 0, value: Some(v) });
                (self.entries.len() - 1, 0)
            }
        }
    }

    /// Takes the value at `idx` out; the index is reused, under the next generation.
    pub(crate) fn remove(&mut self, idx: usize) -> Option<T> {
        let e = self.entries.get_mut(idx)?;
        let v = e.value.take()?;
        e.generation = e.generation.wrapping_add(1);
        self.free.push(idx);
        self.live -= 1;
        Some(v)
    }

    pub(crate) fn get(&self, idx: usize) -> Option<&T> {
        self.entries.get(idx)?.value.as_ref()
    }

    pub(crate) fn get_mut(&mut self, idx: usize) -> Option<&mut T> {
        self.entries.get_mut(idx)?.value.as_mut()
    }

    /// The generation of index `idx` (of its value if it holds one).
    pub(crate) fn generation(&self, idx: usize) -> u32 {
        self.entries.get(idx).map_or(0, |e| e.generation)
    }

    /// One past the highest index ever used: indexes of values are below it.
    pub(crate) fn bound(&self) -> usize {
        self.entries.len()
    }

    /// Values held.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// The indexes of the values held.
    pub(crate) fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries.iter().enumerate().filter(|(_, e)| e.value.is_some()).map(|(i, _)| i)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.entries.iter().filter_map(|e| e.value.as_ref())
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.entries.iter_mut().filter_map(|e| e.value.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_reused_under_a_new_generation() {
        let mut s = Slab::default();
        assert_eq!(s.insert('a'), (0, 0));
        assert_eq!(s.insert('b'), (1, 0));
        assert_eq!(s.remove(0), Some('a'));
        assert_eq!(s.remove(0), None, "once");
        assert_eq!((s.live(), s.generation(0)), (1, 1));
        assert_eq!(s.insert('c'), (0, 1), "the freed index, next generation");
        assert_eq!(s.insert('d'), (2, 0));
        assert_eq!(s.bound(), 3, "no growth while an index is free");
        assert_eq!(s.indexes().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((s.get(0), s.get(5)), (Some(&'c'), None));
    }
}
