//! What the export keeps of each position between the walk and the formatting:
//! a compact code of its SFEN that sorts like the SFEN text, 16 bytes a node
//! (with the node id) instead of the text and the legal moves (~130 bytes).
//!
//! **The code.** An SFEN without its ply is 11 fields: the nine ranks as printed
//! (`lnsgkgsnl`, `1r5b1`, ...), the side to move and the hands. Each field has a
//! dictionary: the distinct strings of a sample of the book, sorted by bytes. A
//! field's symbols are `gap 0, entry 0, gap 1, entry 1, ..., entry k-1, gap k`,
//! and they get an alphabetic prefix code (code words in symbol order; built by
//! splitting the symbols' weights in halves, so frequent strings get short words).
//! A string of the dictionary is its entry's word. Any other string is the word of
//! the gap where it sorts, then its bytes, then an end mark, in a second
//! alphabetic code of the field (the end mark first, then the bytes in byte
//! order, weighted by the bytes of the strings the sample saw once: those are
//! what the strings it did not see look like). A position is its fields' codes
//! one after the other.
//!
//! **Why bit order is SFEN byte order.** Ranks are followed by `/` (the last by a
//! space) and no rank string is a proper prefix of another (each covers exactly
//! nine squares), so two SFENs compare like the first field where they differ; the
//! side is one byte; the hands are followed by a space, which sorts before every
//! byte of a hand, so they compare as plain strings (a prefix first). Within a
//! field, entries and gaps are in byte order, so are their code words (alphabetic
//! code), and two literal strings in the same gap compare like their byte codes
//! (alphabetic, the end mark lowest). The code is prefix-free, so two codes
//! differ at a bit before either ends, whatever follows them.
//!
//! **Slots.** A node's code sits in a `u128`: the first 95 code bits, then a flag
//! saying that the code is longer (its remaining bits are kept aside, by node id),
//! then the node id in the low 32 bits. Sorting the slots as integers sorts the
//! nodes by SFEN; only codes whose first 95 bits tie (both flagged) need their
//! remaining bits compared. The sample grows with the book (1/64 of its nodes,
//! 16,384 to 65,536); on the 15M-node synthetic book codes average ~80 bits and
//! ~12 % of them overflow (~37 MB aside), on the 1M one ~63 bits and ~4 %.
//!
//! Decoding gives the text back byte for byte: the SFEN written is the one the
//! rules core printed during the walk.

use std::sync::Arc;

use hashbrown::HashMap;
use rayon::prelude::*;

use super::TeraShockError;
use crate::{Book, NodeId};

/// Fields of an SFEN without ply: nine ranks, side to move, hands.
pub(crate) const FIELDS: usize = 11;

/// Bytes a literal may hold, in byte order; a byte's literal symbol is its
/// index + 1 (symbol 0 ends a literal).
const ALPHABET: &[u8; 29] = b"+-0123456789BGKLNPRSbgklnprsw";

/// Longest field accepted (a rank prints at most 18 bytes, hands at most 26).
const MAX_FIELD_BYTES: usize = 32;

/// Longest literal symbol word (beyond this a field's literals fall back to
/// equal weights: 5 bits at most).
const MAX_LITERAL_BITS: u8 = 16;

/// Code capacity in 64-bit words: 11 fields of at most 56 + 33 * 16 bits.
const WORDS: usize = 101;

/// Code bits kept in a slot.
const SLOT_BITS: usize = 95;

/// Longest code word a field's code may have (the weight split keeps them far
/// shorter; beyond this the field falls back to equal weights, whose words are
/// at most 18 bits for the 2 * 65,536 + 1 symbols of a field).
const MAX_WORD_BITS: u8 = 56;

/// Positions sampled for the dictionaries: 1/64 of the nodes, within these bounds.
const SAMPLES_MIN: usize = 16_384;
const SAMPLES_MAX: usize = 65_536;

/// A code under construction or being read: bits from the most significant bit
/// of `words[0]` on.
#[derive(Clone)]
pub(crate) struct Code {
    words: [u64; WORDS],
    len: usize,
}

impl Default for Code {
    fn default() -> Self {
        Self {
            words: [0; WORDS],
            len: 0,
        }
    }
}

impl Code {
    fn clear(&mut self) {
        // Only the words written since the last clear hold bits.
        let dirty = self.len.div_ceil(64).min(WORDS);
        self.words[..dirty].fill(0);
        self.len = 0;
    }

    /// Appends the low `n` bits of `value` (`n` <= 64).
    fn push(&mut self, value: u64, n: u32) -> Result<(), TeraShockError> {
        if n == 0 {
            return Ok(());
        }
        let n = n as usize;
        if self.len + n > WORDS * 64 {
            return Err(TeraShockError::Invalid("an SFEN code is too long".into()));
        }
        let value = if n == 64 {
            value
        } else {
            value & ((1u64 << n) - 1)
        };
        let (word, offset) = (self.len / 64, self.len % 64);
        let free = 64 - offset;
        if n <= free {
            self.words[word] |= value << (free - n);
        } else {
            self.words[word] |= value >> (n - free);
            self.words[word + 1] |= value << (64 - (n - free));
        }
        self.len += n;
        Ok(())
    }

    /// The 64 bits from bit `pos` on (zeros past the capacity).
    fn window(&self, pos: usize) -> u64 {
        let (word, offset) = (pos / 64, pos % 64);
        let hi = self.words.get(word).copied().unwrap_or(0);
        if offset == 0 {
            return hi;
        }
        let lo = self.words.get(word + 1).copied().unwrap_or(0);
        hi << offset | lo >> (64 - offset)
    }

    /// The slot of this code for node `id`.
    fn slot(&self, id: u32) -> u128 {
        let top = u128::from(self.words[0]) << 64 | u128::from(self.words[1]);
        let code = top >> (128 - SLOT_BITS) << (128 - SLOT_BITS);
        let flag = u128::from(self.len > SLOT_BITS) << 32;
        code | flag | u128::from(id)
    }

    /// The bits past the slot's, as bytes (most significant bit first).
    fn overflow_bytes(&self, out: &mut Vec<u8>) {
        let mut pos = SLOT_BITS;
        while pos < self.len {
            out.push((self.window(pos) >> 56) as u8);
            pos += 8;
        }
    }

    /// Becomes the code of `slot`, with its remaining bits `rest` when the slot
    /// is flagged.
    fn load(&mut self, slot: u128, rest: &[u8]) -> Result<(), TeraShockError> {
        self.clear();
        let top = slot >> (128 - SLOT_BITS) << (128 - SLOT_BITS);
        self.words[0] = (top >> 64) as u64;
        self.words[1] = top as u64;
        self.len = SLOT_BITS;
        for &b in rest {
            self.push(u64::from(b), 8)?;
        }
        Ok(())
    }
}

/// True when a slot's code continues outside it.
fn flagged(slot: u128) -> bool {
    slot >> 32 & 1 == 1
}

/// The node id of a slot.
pub(crate) fn slot_id(slot: u128) -> u32 {
    slot as u32
}

/// One field's dictionary and code.
#[derive(Debug, Default)]
struct Field {
    /// Distinct strings in byte order.
    entries: Vec<Box<[u8]>>,
    lookup: HashMap<Box<[u8]>, u32>,
    /// Per symbol (gap 0, entry 0, gap 1, ..., gap k): the code word shifted to
    /// the top of a u64 (increasing), and its length.
    starts: Vec<u64>,
    lens: Vec<u8>,
    /// Per value of a code's first [`FAST_BITS`] bits, the first and last
    /// symbols whose words can start with them.
    fast: Vec<(u32, u32)>,
    /// The literal code: per symbol (end, then the bytes of [`ALPHABET`]), the
    /// word at the top of a u64 and its length.
    literal_starts: Vec<u64>,
    literal_lens: Vec<u8>,
}

/// Bits of the decoding table's index.
const FAST_BITS: u32 = 10;

impl Field {
    /// A field whose dictionary holds the strings counted in `counts`.
    fn new(counts: HashMap<Box<[u8]>, u64>) -> Self {
        let singletons = counts.values().filter(|&&c| c == 1).count() as u64;
        // Literal symbols: one count each, plus the bytes and ends of the strings
        // seen once.
        let mut literal_weights = vec![1u64; ALPHABET.len() + 1];
        for (text, _) in counts.iter().filter(|&(_, &c)| c == 1) {
            literal_weights[0] += 1;
            for &b in text.iter() {
                literal_weights[usize::from(LITERAL_CODES[usize::from(b)])] += 1;
            }
        }
        let (literal_starts, literal_lens) = alphabetic_code(&literal_weights, MAX_LITERAL_BITS)
            .or_else(|| alphabetic_code(&[1; ALPHABET.len() + 1], MAX_LITERAL_BITS))
            .unwrap_or_default();
        let mut entries: Vec<(Box<[u8]>, u64)> = counts.into_iter().collect();
        entries.sort_unstable();
        let k = entries.len() as u64;
        // Strings the sample did not see share the mass of those it saw once
        // (Good-Turing), spread over the gaps: weights scaled by (k + 1).
        let gap = singletons.max(1);
        let mut weights = Vec::with_capacity(entries.len() * 2 + 1);
        for (_, count) in &entries {
            weights.push(gap);
            weights.push(count * (k + 1));
        }
        weights.push(gap);
        let (starts, lens) = alphabetic_code(&weights, MAX_WORD_BITS)
            .or_else(|| alphabetic_code(&vec![1; weights.len()], MAX_WORD_BITS))
            .unwrap_or_default();
        let lookup = entries
            .iter()
            .enumerate()
            .map(|(i, (s, _))| (s.clone(), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        let symbol_at = |w: u64| {
            u32::try_from(starts.partition_point(|&s| s <= w).saturating_sub(1)).unwrap_or(0)
        };
        let fast = (0..1u64 << FAST_BITS)
            .map(|p| {
                let first = p << (64 - FAST_BITS);
                (symbol_at(first), symbol_at(first | (u64::MAX >> FAST_BITS)))
            })
            .collect();
        Self {
            entries: entries.into_iter().map(|(s, _)| s).collect(),
            lookup,
            starts,
            lens,
            fast,
            literal_starts,
            literal_lens,
        }
    }

    fn push_symbol(&self, symbol: usize, code: &mut Code) -> Result<(), TeraShockError> {
        push_word(self.starts[symbol], self.lens[symbol], code)
    }

    fn push_literal(&self, symbol: usize, code: &mut Code) -> Result<(), TeraShockError> {
        push_word(self.literal_starts[symbol], self.literal_lens[symbol], code)
    }

    fn encode(&self, text: &[u8], code: &mut Code) -> Result<(), TeraShockError> {
        if let Some(&i) = self.lookup.get(text) {
            return self.push_symbol(2 * i as usize + 1, code);
        }
        if text.len() > MAX_FIELD_BYTES {
            return Err(TeraShockError::Invalid(format!(
                "an SFEN field of {} bytes",
                text.len()
            )));
        }
        let gap = self.entries.partition_point(|e| **e < *text);
        self.push_symbol(2 * gap, code)?;
        for &b in text {
            let c = LITERAL_CODES[usize::from(b)];
            if c == 0 {
                return Err(TeraShockError::Invalid(format!(
                    "byte {b:#04x} in an SFEN field"
                )));
            }
            self.push_literal(usize::from(c), code)?;
        }
        self.push_literal(0, code)
    }

    /// Appends the field at `*pos` of `code` to `out` and moves `pos` past it;
    /// returns its entry, [`LITERAL`] for a string outside the dictionary.
    fn decode(
        &self,
        code: &Code,
        pos: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<u32, TeraShockError> {
        let window = code.window(*pos);
        let (first, last) = self.fast[(window >> (64 - FAST_BITS)) as usize];
        let (first, last) = (first as usize, last as usize);
        let symbol = if first == last {
            first
        } else {
            first + self.starts[first + 1..=last].partition_point(|&s| s <= window)
        };
        *pos += usize::from(self.lens[symbol]);
        if symbol % 2 == 1 {
            out.extend_from_slice(&self.entries[symbol / 2]);
            return Ok(u32::try_from(symbol / 2).unwrap_or(LITERAL));
        }
        for _ in 0..=MAX_FIELD_BYTES {
            let window = code.window(*pos);
            let c = self.literal_starts.partition_point(|&s| s <= window) - 1;
            *pos += usize::from(self.literal_lens[c]);
            if c == 0 {
                return Ok(LITERAL);
            }
            out.push(*ALPHABET.get(c - 1).ok_or_else(damaged)?);
        }
        Err(damaged())
    }
}

/// Appends a code word (at the top of `start`, `len` bits).
fn push_word(start: u64, len: u8, code: &mut Code) -> Result<(), TeraShockError> {
    if len == 0 {
        return Ok(());
    }
    code.push(start >> (64 - u32::from(len)), u32::from(len))
}

/// What [`SfenCoder::decode`] gives for a field outside its dictionary.
pub(crate) const LITERAL: u32 = u32::MAX;

fn damaged() -> TeraShockError {
    TeraShockError::Invalid("a damaged SFEN code".into())
}

/// Byte -> literal symbol (0: not allowed).
const LITERAL_CODES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < ALPHABET.len() {
        t[ALPHABET[i] as usize] = i as u8 + 1;
        i += 1;
    }
    t
};

/// An alphabetic prefix code for symbols of the given weights (all > 0): code
/// words (at the top of a u64) in symbol order and their lengths. Each range of
/// symbols is split where its weight is closest to halves. `None` when a word
/// would be longer than `max_bits` (equal weights are never longer than
/// log2 of their number, rounded up).
fn alphabetic_code(weights: &[u64], max_bits: u8) -> Option<(Vec<u64>, Vec<u8>)> {
    let n = weights.len();
    let mut prefix = Vec::with_capacity(n + 1);
    let mut total = 0u64;
    prefix.push(0);
    for &w in weights {
        total += w;
        prefix.push(total);
    }
    let mut starts = vec![0u64; n];
    let mut lens = vec![0u8; n];
    // (symbol range, depth, code word so far)
    let mut stack = vec![(0usize, n, 0u8, 0u64)];
    while let Some((lo, hi, depth, word)) = stack.pop() {
        if hi - lo == 1 {
            starts[lo] = if depth == 0 { 0 } else { word << (64 - depth) };
            lens[lo] = depth;
            continue;
        }
        if depth >= max_bits {
            return None;
        }
        let whole = prefix[hi] - prefix[lo];
        // The first split point whose left weight reaches half, or the one before.
        let mut m = lo + 1 + prefix[lo + 1..hi].partition_point(|&p| 2 * (p - prefix[lo]) < whole);
        m = m.min(hi - 1);
        if m > lo + 1 {
            let left = prefix[m] - prefix[lo];
            let before = prefix[m - 1] - prefix[lo];
            if whole.abs_diff(2 * before) <= whole.abs_diff(2 * left) {
                m -= 1;
            }
        }
        stack.push((lo, m, depth + 1, word << 1));
        stack.push((m, hi, depth + 1, word << 1 | 1));
    }
    Some((starts, lens))
}

/// The 11 fields of an SFEN (anything after the hands, the ply, is ignored).
fn fields(sfen: &str) -> Result<[&[u8]; FIELDS], TeraShockError> {
    let bytes = sfen.as_bytes();
    let mut out: [&[u8]; FIELDS] = [&[]; FIELDS];
    let mut field = 0;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Ranks end at `/`, the board, side and hands at a space.
        let end = match b {
            b'/' => field < 8,
            b' ' => field >= 8,
            _ => false,
        };
        if end {
            out[field] = &bytes[start..i];
            field += 1;
            start = i + 1;
            if field == FIELDS {
                return Ok(out);
            }
        }
    }
    if field == FIELDS - 1 {
        out[field] = &bytes[start..];
        return Ok(out);
    }
    Err(TeraShockError::Invalid(format!("`{sfen}` is not an SFEN")))
}

/// Codes of SFEN texts that sort like the texts (see the module documentation).
#[derive(Debug)]
pub(crate) struct SfenCoder {
    fields: Vec<Field>,
}

impl SfenCoder {
    /// A coder whose dictionaries hold the fields of `samples` (SFENs, with or
    /// without ply). Any SFEN can be coded; those like the samples code shortest.
    ///
    /// # Errors
    /// A sample that is not an SFEN.
    pub(crate) fn from_samples<'a>(
        samples: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, TeraShockError> {
        let mut counts: Vec<HashMap<Box<[u8]>, u64>> = vec![HashMap::new(); FIELDS];
        for sfen in samples {
            for (f, text) in fields(sfen)?.into_iter().enumerate() {
                *counts[f].entry(Box::from(text)).or_default() += 1;
            }
        }
        Ok(Self {
            fields: counts.into_iter().map(Field::new).collect(),
        })
    }

    /// A coder for `book`: its dictionaries come from the positions of 1/64 of
    /// its nodes (16,384 to 65,536, all of a smaller book) spread over the ids
    /// (nodes whose position cannot be rebuilt are skipped: the walk reports them).
    ///
    /// # Errors
    /// None in practice (the samples are the rules core's SFENs).
    pub(crate) fn for_book(book: &Book) -> Result<Self, TeraShockError> {
        let n = book.len();
        let count = (n / 64).clamp(SAMPLES_MIN, SAMPLES_MAX).min(n);
        let samples: Vec<String> = (0..count)
            .into_par_iter()
            .filter_map(|i| {
                let id = u32::try_from(i * n / count).ok()?;
                book.position_of(NodeId(id)).ok()
            })
            .map(|pos| pos.to_sfen_without_ply())
            .collect();
        Self::from_samples(samples.iter().map(String::as_str))
    }

    /// Codes `sfen` (its ply is left out) into `code`.
    ///
    /// # Errors
    /// Text that is not an SFEN as the rules core prints it.
    pub(crate) fn encode(&self, sfen: &str, code: &mut Code) -> Result<(), TeraShockError> {
        code.clear();
        for (field, text) in self.fields.iter().zip(fields(sfen)?) {
            field.encode(text, code)?;
        }
        Ok(())
    }

    /// The strings of field `f`'s dictionary (ranks 0..9 top to bottom, the side
    /// to move, the hands), in byte order: [`SfenCoder::decode`] gives indices in it.
    pub(crate) fn dictionary(&self, f: usize) -> &[Box<[u8]>] {
        self.fields.get(f).map_or(&[], |field| &field.entries)
    }

    /// Appends the SFEN of `code` without ply (`<board> <side> <hands>`) to `out`;
    /// each field's index in its dictionary goes to `entries` ([`LITERAL`] for a
    /// string outside it).
    ///
    /// # Errors
    /// A code that is not one of this coder's.
    pub(crate) fn decode(
        &self,
        code: &Code,
        out: &mut Vec<u8>,
        entries: &mut [u32; FIELDS],
    ) -> Result<(), TeraShockError> {
        let mut pos = 0;
        for (f, field) in self.fields.iter().enumerate() {
            entries[f] = field.decode(code, &mut pos, out)?;
            match f {
                0..8 => out.push(b'/'),
                8 | 9 => out.push(b' '),
                _ => {}
            }
        }
        if pos > code.len.max(SLOT_BITS) {
            return Err(damaged());
        }
        Ok(())
    }
}

/// Every node's SFEN code: one slot a node, sorted into SFEN order by
/// [`SfenTable::sort`], plus the bits of the codes longer than a slot.
pub(crate) struct SfenTable {
    /// Shared with the threads that code the walk's SFENs.
    coder: Arc<SfenCoder>,
    slots: Vec<u128>,
    /// (node id, start in `rest`) of flagged slots; sorted by id by `sort`.
    rest_index: Vec<(u32, u64)>,
    /// A length (u16, big-endian), then the bytes, per flagged slot.
    rest: Vec<u8>,
}

/// Codes recorded by one thread, for [`SfenTable::merge`].
#[derive(Default)]
pub(crate) struct SfenPart {
    slots: Vec<u128>,
    rest_index: Vec<(u32, u64)>,
    rest: Vec<u8>,
    code: Code,
}

impl SfenPart {
    /// Records the SFEN of node `id` (for [`SfenTable::merge`]): threads code
    /// the SFENs of their parts of the book at once.
    ///
    /// # Errors
    /// Text that is not an SFEN as the rules core prints it.
    pub(crate) fn add(
        &mut self,
        coder: &SfenCoder,
        id: NodeId,
        sfen: &str,
    ) -> Result<(), TeraShockError> {
        let code = &mut self.code;
        coder.encode(sfen, code)?;
        let slot = code.slot(id.0);
        if flagged(slot) {
            self.rest_index.push((id.0, self.rest.len() as u64));
            let at = self.rest.len();
            self.rest.extend_from_slice(&[0, 0]);
            code.overflow_bytes(&mut self.rest);
            let len = u16::try_from(self.rest.len() - at - 2).map_err(|_| damaged())?;
            self.rest[at..at + 2].copy_from_slice(&len.to_be_bytes());
        }
        self.slots.push(slot);
        Ok(())
    }
}

impl SfenTable {
    /// A table for `nodes` nodes (every one must be added).
    pub(crate) fn new(coder: SfenCoder, nodes: usize) -> Self {
        Self {
            coder: Arc::new(coder),
            slots: vec![0; nodes],
            rest_index: Vec::new(),
            rest: Vec::new(),
        }
    }

    /// Records the SFEN of node `id`.
    ///
    /// # Errors
    /// Text that is not an SFEN as the rules core prints it.
    #[cfg(test)]
    pub(crate) fn add(&mut self, id: NodeId, sfen: &str) -> Result<(), TeraShockError> {
        let mut part = SfenPart::default();
        part.add(&self.coder, id, sfen)?;
        self.merge(part);
        Ok(())
    }

    /// Takes in the codes recorded in `part`.
    pub(crate) fn merge(&mut self, part: SfenPart) {
        for slot in part.slots {
            self.slots[slot_id(slot) as usize] = slot;
        }
        let base = self.rest.len() as u64;
        self.rest_index
            .extend(part.rest_index.iter().map(|&(id, at)| (id, base + at)));
        self.rest.extend_from_slice(&part.rest);
    }

    /// The remaining code bytes of node `id` (empty when it has none).
    fn rest_of(&self, id: u32) -> &[u8] {
        let Ok(k) = self.rest_index.binary_search_by_key(&id, |&(i, _)| i) else {
            return &[];
        };
        let start = usize::try_from(self.rest_index[k].1).unwrap_or(usize::MAX);
        let Some(&[hi, lo]) = self.rest.get(start..start.saturating_add(2)) else {
            return &[];
        };
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        self.rest
            .get(start + 2..start + 2 + len)
            .unwrap_or_default()
    }

    /// Sorts the slots into SFEN byte order (node ids of equal SFENs, which a
    /// book does not have, in id order).
    pub(crate) fn sort(&mut self) {
        self.rest_index.sort_unstable();
        self.rest_index.shrink_to_fit();
        self.rest.shrink_to_fit();
        self.slots.par_sort_unstable();
        // Slots whose 95 code bits tie: codes that continue (or equal SFENs).
        let mut i = 0;
        while i < self.slots.len() {
            let head = self.slots[i] >> 32;
            let mut j = i + 1;
            while j < self.slots.len() && self.slots[j] >> 32 == head {
                j += 1;
            }
            if j - i > 1 {
                let mut run = self.slots[i..j].to_vec();
                run.sort_by(|&a, &b| {
                    self.rest_of(slot_id(a))
                        .cmp(self.rest_of(slot_id(b)))
                        .then(slot_id(a).cmp(&slot_id(b)))
                });
                self.slots[i..j].copy_from_slice(&run);
            }
            i = j;
        }
    }

    /// The slots: by node id before [`SfenTable::sort`], in SFEN order after.
    pub(crate) fn slots(&self) -> &[u128] {
        &self.slots
    }

    /// The coder of the table's codes.
    pub(crate) fn coder(&self) -> &SfenCoder {
        &self.coder
    }

    /// The coder, for threads that code SFENs into [`SfenPart`]s while the
    /// table takes in finished ones.
    pub(crate) fn shared_coder(&self) -> Arc<SfenCoder> {
        Arc::clone(&self.coder)
    }

    /// Appends the SFEN without ply of `slot` to `out`, its fields' dictionary
    /// entries to `entries` (see [`SfenCoder::decode`]); `code` is scratch space.
    ///
    /// # Errors
    /// A damaged code.
    pub(crate) fn decode(
        &self,
        slot: u128,
        code: &mut Code,
        out: &mut Vec<u8>,
        entries: &mut [u32; FIELDS],
    ) -> Result<(), TeraShockError> {
        let rest = if flagged(slot) {
            self.rest_of(slot_id(slot))
        } else {
            &[]
        };
        code.load(slot, rest)?;
        self.coder.decode(code, out, entries)
    }
}

#[cfg(test)]
mod tests;
