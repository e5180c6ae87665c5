//! The node manager's view of the slots: which are online and which object
//! holds each, kept across rebalances. The online and free slots are also
//! bitmaps (64 slots a word), so that a free aligned block is found with a
//! few word operations instead of a walk over the machine, and the counts a
//! rebalance needs (online slots, aligned online pairs) are kept as CPUs
//! come and go instead of counted again.
//!
//! Invariants: a slot is free iff it is online and no object holds it; a
//! held slot is online (a CPU going offline makes its holder re-placed in
//! the same rebalance); blocks are aligned (start a multiple of a
//! power-of-two size).

use crate::nodes::node::Node;
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Grid {
    /// The holder of each slot, per node.
    owner: Vec<Vec<Option<i32>>>,
    /// Online slots, a bit each, per node.
    online: Vec<Vec<u64>>,
    /// Online slots no object holds, per node.
    free: Vec<Vec<u64>>,
    /// Where each CPU of a node is: (node, slot). A CPU is in one node at
    /// most (node.rs builds them so).
    at: HashMap<usize, (usize, usize)>,
    /// Online slots, over every node.
    pub online_slots: usize,
    /// Aligned pairs (slots 2i, 2i + 1) with both online, over every node.
    pub aligned_pairs: usize,
}

/// Bits at every multiple of `size` (a power of two up to 64) in a word.
fn aligned(size: usize) -> u64 {
    if size >= 64 {
        1
    } else {
        u64::MAX / ((1u64 << size) - 1)
    }
}

/// Are the `size` bits from `start` all set? `start` is a multiple of `size`.
fn all_set(bits: &[u64], start: usize, size: usize) -> bool {
    if size >= 64 {
        bits[start / 64..(start + size) / 64].iter().all(|&w| w == u64::MAX)
    } else {
        let mask = (1u64 << size) - 1;
        (bits[start / 64] >> (start % 64)) & mask == mask
    }
}

fn set(bits: &mut [u64], slot: usize, on: bool) {
    if on {
        bits[slot / 64] |= 1 << (slot % 64);
    } else {
        bits[slot / 64] &= !(1 << (slot % 64));
    }
}

fn get(bits: &[u64], slot: usize) -> bool {
    bits[slot / 64] >> (slot % 64) & 1 == 1
}

impl Grid {
    /// Every slot free where online.
    pub fn new(nodes: &[Node], online: &BTreeSet<usize>) -> Self {
        let words = |n: &Node| vec![0u64; n.slots.len().div_ceil(64)];
        let mut g = Grid {
            owner: nodes.iter().map(|n| vec![None; n.slots.len()]).collect(),
            online: nodes.iter().map(words).collect(),
            free: nodes.iter().map(words).collect(),
            at: HashMap::new(),
            online_slots: 0,
            aligned_pairs: 0,
        };
        for (n, node) in nodes.iter().enumerate() {
            for (s, &cpu) in node.slots.iter().enumerate() {
                g.at.insert(cpu, (n, s));
                if online.contains(&cpu) {
                    g.set_online(n, s, true);
                }
            }
        }
        g
    }

    /// Node and slot of `cpu`, if a node holds it.
    pub fn slot_of(&self, cpu: usize) -> Option<(usize, usize)> {
        self.at.get(&cpu).copied()
    }

    /// A slot comes online or goes offline; returns its holder, if any (it
    /// must be placed again when the slot goes offline).
    pub fn set_online(&mut self, node: usize, slot: usize, on: bool) -> Option<i32> {
        let bits = &mut self.online[node];
        if get(bits, slot) == on {
            return None;
        }
        let pair = slot / 2 * 2;
        let pair_online = |bits: &[u64], len: usize| pair + 1 < len && get(bits, pair) && get(bits, pair + 1);
        let len = self.owner[node].len();
        let was_pair = pair_online(bits, len);
        set(bits, slot, on);
        let is_pair = pair_online(bits, len);
        self.aligned_pairs = self.aligned_pairs + usize::from(is_pair) - usize::from(was_pair);
        self.online_slots = if on { self.online_slots + 1 } else { self.online_slots - 1 };
        let holder = self.owner[node][slot];
        set(&mut self.free[node], slot, on && holder.is_none());
        holder
    }

    pub fn owner(&self, node: usize, slot: usize) -> Option<i32> {
        self.owner[node][slot]
    }

    pub fn block_online(&self, node: usize, start: usize, size: usize) -> bool {
        all_set(&self.online[node], start, size)
    }

    /// Online and held by nobody.
    pub fn block_free(&self, node: usize, start: usize, size: usize) -> bool {
        all_set(&self.free[node], start, size)
    }

    /// `pid` holds the block now.
    pub fn take(&mut self, node: usize, start: usize, size: usize, pid: i32) {
        for s in start..start + size {
            self.owner[node][s] = Some(pid);
            set(&mut self.free[node], s, false);
        }
    }

    /// Nobody holds the block now.
    pub fn clear(&mut self, node: usize, start: usize, size: usize) {
        for s in start..start + size {
            self.owner[node][s] = None;
            let on = get(&self.online[node], s);
            set(&mut self.free[node], s, on);
        }
    }

    /// Nobody holds anything.
    pub fn clear_all(&mut self) {
        for row in &mut self.owner {
            row.fill(None);
        }
        self.free.clone_from(&self.online);
    }

    /// The starts of the free aligned blocks of `size` slots in `node`,
    /// lowest first.
    pub fn free_blocks(&self, node: usize, size: usize) -> impl Iterator<Item = usize> + '_ {
        let bits = &self.free[node];
        let small = size < 64;
        // Under 64 slots: each word's aligned runs of `size` free bits.
        let runs = bits.iter().enumerate().filter(move |_| small).flat_map(move |(w, &word)| {
            let mut run = word;
            let mut k = 1;
            while k < size {
                run &= run >> k;
                k <<= 1;
            }
            let mut starts = run & aligned(size);
            std::iter::from_fn(move || {
                (starts != 0).then(|| {
                    let bit = starts.trailing_zeros() as usize;
                    starts &= starts - 1;
                    w * 64 + bit
                })
            })
        });
        // 64 and up: whole words, `size / 64` of them a block.
        let words = (0..if small { 0 } else { bits.len() * 64 / size })
            .map(move |b| b * size)
            .filter(move |&start| all_set(bits, start, size));
        runs.chain(words)
    }
}
