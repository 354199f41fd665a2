//! A reader of the pickle opcodes torch's flight-recorder dumps use (the
//! plain data of protocols 2 to 5: dicts, lists, tuples, strings, numbers),
//! into a [`PickleValue`] tree.
//!
//! Objects live in an arena while the opcodes run, so a list memoized empty
//! and filled later is seen filled by every reference to it, as in Python.
//! A class is refused by name, except torch's own list builders
//! (`torch.jit._pickle.build_intlist` and kin), which stand for their list.
//! Bounds: lengths are checked against the bytes left before anything is
//! allocated; the tree built is at most [`MAX_DEPTH`] deep and
//! [`MAX_NODES`] values (a shared object counts each time it is reached).

/// The deepest nesting of the tree built.
pub const MAX_DEPTH: usize = 64;
/// The most values the tree built may hold.
pub const MAX_NODES: usize = 5_000_000;

/// A value read from a pickle.
#[derive(Debug, Clone, PartialEq)]
pub enum PickleValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<PickleValue>),
    Tuple(Vec<PickleValue>),
    /// Key-value pairs in the order written.
    Dict(Vec<(PickleValue, PickleValue)>),
}

impl PickleValue {
    /// The value of `key` in a dict with string keys.
    pub fn get(&self, key: &str) -> Option<&PickleValue> {
        match self {
            PickleValue::Dict(pairs) => pairs.iter().find_map(|(k, v)| match k {
                PickleValue::Str(s) if s == key => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            PickleValue::None => "None",
            PickleValue::Bool(_) => "a bool",
            PickleValue::Int(_) => "an int",
            PickleValue::Float(_) => "a float",
            PickleValue::Str(_) => "a string",
            PickleValue::Bytes(_) => "bytes",
            PickleValue::List(_) => "a list",
            PickleValue::Tuple(_) => "a tuple",
            PickleValue::Dict(_) => "a dict",
        }
    }
}

/// An object while the opcodes run: containers hold arena indices.
#[derive(Debug)]
enum Obj {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Global(String, String),
}

/// Reads a whole pickle into its value; an error says what and at which byte.
pub fn parse(bytes: &[u8]) -> Result<PickleValue, String> {
    let mut machine = Machine {
        bytes,
        pos: 0,
        arena: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: std::collections::HashMap::new(),
    };
    let root = machine.run()?;
    let mut budget = MAX_NODES;
    machine.build(root, 0, &mut budget)
}

struct Machine<'a> {
    bytes: &'a [u8],
    pos: usize,
    arena: Vec<Obj>,
    stack: Vec<usize>,
    marks: Vec<usize>,
    memo: std::collections::HashMap<u64, usize>,
}

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| format!("pickle cut short at byte {} (wanted {n} more)", self.pos))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, String> {
        let len = self.uint(n)?;
        let left = (self.bytes.len() - self.pos) as u64;
        if len > left {
            return Err(format!(
                "pickle at byte {}: a length of {len} bytes with {left} left",
                self.pos
            ));
        }
        Ok(len as usize)
    }

    fn line(&mut self) -> Result<String, String> {
        let rest = &self.bytes[self.pos..];
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| format!("pickle at byte {}: a line without its end", self.pos))?;
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(text)
    }

    fn push(&mut self, obj: Obj) {
        self.arena.push(obj);
        self.stack.push(self.arena.len() - 1);
    }

    fn pop(&mut self) -> Result<usize, String> {
        self.stack
            .pop()
            .ok_or_else(|| format!("pickle at byte {}: the stack is empty", self.pos))
    }

    fn top(&self) -> Result<usize, String> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| format!("pickle at byte {}: the stack is empty", self.pos))
    }

    fn pop_mark(&mut self) -> Result<Vec<usize>, String> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| format!("pickle at byte {}: no MARK to pop to", self.pos))?;
        if mark > self.stack.len() {
            return Err(format!(
                "pickle at byte {}: a MARK past the stack",
                self.pos
            ));
        }
        Ok(self.stack.split_off(mark))
    }

    fn str_obj(&mut self, n: usize) -> Result<(), String> {
        let len = self.len(n)?;
        let bytes = self.take(len)?;
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("pickle at byte {}: a string that is not UTF-8", self.pos))?;
        self.push(Obj::Str(text.to_string()));
        Ok(())
    }

    fn bytes_obj(&mut self, n: usize) -> Result<(), String> {
        let len = self.len(n)?;
        let bytes = self.take(len)?.to_vec();
        self.push(Obj::Bytes(bytes));
        Ok(())
    }

    fn long(&mut self, n: usize) -> Result<(), String> {
        let len = self.len(n)?;
        let bytes = self.take(len)?;
        if len > 8 {
            return Err(format!(
                "pickle at byte {}: an integer of {len} bytes, wider than 64 bits",
                self.pos
            ));
        }
        let mut value: i64 = 0;
        for (i, b) in bytes.iter().enumerate() {
            value |= i64::from(*b) << (8 * i);
        }
        if len > 0 && len < 8 && bytes[len - 1] & 0x80 != 0 {
            value -= 1i64 << (8 * len);
        }
        self.push(Obj::Int(value));
        Ok(())
    }

    fn append(&mut self, list: usize, items: Vec<usize>) -> Result<(), String> {
        match &mut self.arena[list] {
            Obj::List(existing) => {
                existing.extend(items);
                Ok(())
            }
            _ => Err(format!("pickle at byte {}: APPEND to a non-list", self.pos)),
        }
    }

    fn set_items(&mut self, dict: usize, items: Vec<usize>) -> Result<(), String> {
        if !items.len().is_multiple_of(2) {
            return Err(format!(
                "pickle at byte {}: SETITEMS with an odd count",
                self.pos
            ));
        }
        let pairs: Vec<(usize, usize)> = items.chunks(2).map(|p| (p[0], p[1])).collect();
        match &mut self.arena[dict] {
            Obj::Dict(existing) => {
                existing.extend(pairs);
                Ok(())
            }
            _ => Err(format!(
                "pickle at byte {}: SETITEM on a non-dict",
                self.pos
            )),
        }
    }

    fn memo_get(&mut self, key: u64) -> Result<(), String> {
        let id = *self
            .memo
            .get(&key)
            .ok_or_else(|| format!("pickle at byte {}: memo {key} was never put", self.pos))?;
        self.stack.push(id);
        Ok(())
    }

    /// A class applied to its arguments: torch's list builders give their list.
    fn reduce(&mut self, callable: usize, args: usize) -> Result<(), String> {
        let (module, name) = match &self.arena[callable] {
            Obj::Global(module, name) => (module.clone(), name.clone()),
            _ => {
                return Err(format!(
                    "pickle at byte {}: REDUCE of a non-class",
                    self.pos
                ))
            }
        };
        let is_list_builder = module == "torch.jit._pickle" && name.starts_with("build_");
        let first = match &self.arena[args] {
            Obj::Tuple(items) if items.len() == 1 => Some(items[0]),
            _ => None,
        };
        match (is_list_builder, first) {
            (true, Some(list)) => {
                self.stack.push(list);
                Ok(())
            }
            _ => Err(format!(
                "pickle holds the class {module}.{name}: a flight-recorder dump holds plain data only"
            )),
        }
    }

    /// Runs the opcodes to STOP; the index of the value left.
    fn run(&mut self) -> Result<usize, String> {
        loop {
            let at = self.pos;
            let op = *self.take(1)?.first().unwrap_or(&0);
            match op {
                0x80 => {
                    self.take(1)?;
                }
                0x95 => {
                    self.take(8)?;
                }
                b'.' => return self.pop(),
                b'(' => self.marks.push(self.stack.len()),
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => self.stack.push(self.top()?),
                b'N' => self.push(Obj::None),
                0x88 => self.push(Obj::Bool(true)),
                0x89 => self.push(Obj::Bool(false)),
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.push(Obj::Int(i64::from(v)));
                }
                b'K' => {
                    let v = self.uint(1)?;
                    self.push(Obj::Int(v as i64));
                }
                b'M' => {
                    let v = self.uint(2)?;
                    self.push(Obj::Int(v as i64));
                }
                0x8a => self.long(1)?,
                0x8b => self.long(4)?,
                b'G' => {
                    let bytes = self.take(8)?;
                    let mut raw = [0u8; 8];
                    raw.copy_from_slice(bytes);
                    self.push(Obj::Float(f64::from_be_bytes(raw)));
                }
                b'X' => self.str_obj(4)?,
                0x8c => self.str_obj(1)?,
                0x8d => self.str_obj(8)?,
                b'U' => self.str_obj(1)?,
                b'T' => self.str_obj(4)?,
                b'C' => self.bytes_obj(1)?,
                b'B' => self.bytes_obj(4)?,
                0x8e => self.bytes_obj(8)?,
                b']' => self.push(Obj::List(Vec::new())),
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::List(items));
                }
                b'a' => {
                    let item = self.pop()?;
                    let list = self.top()?;
                    self.append(list, vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    self.append(list, items)?;
                }
                b')' => self.push(Obj::Tuple(Vec::new())),
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return Err(format!("pickle at byte {at}: TUPLE{n} on a short stack"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Obj::Tuple(items));
                }
                b'}' => self.push(Obj::Dict(Vec::new())),
                b'd' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::Dict(Vec::new()));
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let dict = self.top()?;
                    self.set_items(dict, vec![key, value])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                b'q' => {
                    let key = self.uint(1)?;
                    let id = self.top()?;
                    self.memo.insert(key, id);
                }
                b'r' => {
                    let key = self.uint(4)?;
                    let id = self.top()?;
                    self.memo.insert(key, id);
                }
                0x94 => {
                    let key = self.memo.len() as u64;
                    let id = self.top()?;
                    self.memo.insert(key, id);
                }
                b'h' => {
                    let key = self.uint(1)?;
                    self.memo_get(key)?;
                }
                b'j' => {
                    let key = self.uint(4)?;
                    self.memo_get(key)?;
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.push(Obj::Global(module, name));
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (&self.arena[module], &self.arena[name]) {
                        (Obj::Str(m), Obj::Str(n)) => {
                            let global = Obj::Global(m.clone(), n.clone());
                            self.push(global);
                        }
                        _ => return Err(format!("pickle at byte {at}: STACK_GLOBAL of non-strings")),
                    }
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    self.reduce(callable, args)?;
                }
                other => {
                    return Err(format!(
                        "pickle opcode 0x{other:02x} at byte {at}, which a flight-recorder dump does not use"
                    ))
                }
            }
        }
    }

    /// The tree of arena object `id`.
    fn build(&self, id: usize, depth: usize, budget: &mut usize) -> Result<PickleValue, String> {
        if depth > MAX_DEPTH {
            return Err(format!("pickle nested deeper than {MAX_DEPTH}"));
        }
        if *budget == 0 {
            return Err(format!("pickle holds more than {MAX_NODES} values"));
        }
        *budget -= 1;
        let list = |ids: &[usize], budget: &mut usize| {
            ids.iter()
                .map(|i| self.build(*i, depth + 1, budget))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match &self.arena[id] {
            Obj::None => PickleValue::None,
            Obj::Bool(b) => PickleValue::Bool(*b),
            Obj::Int(i) => PickleValue::Int(*i),
            Obj::Float(f) => PickleValue::Float(*f),
            Obj::Str(s) => PickleValue::Str(s.clone()),
            Obj::Bytes(b) => PickleValue::Bytes(b.clone()),
            Obj::List(ids) => PickleValue::List(list(ids, budget)?),
            Obj::Tuple(ids) => PickleValue::Tuple(list(ids, budget)?),
            Obj::Dict(pairs) => {
                let mut out = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    out.push((
                        self.build(*k, depth + 1, budget)?,
                        self.build(*v, depth + 1, budget)?,
                    ));
                }
                PickleValue::Dict(out)
            }
            Obj::Global(module, name) => {
                return Err(format!("pickle holds the class {module}.{name} as a value"))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dict_of_lists_memoized_empty_and_filled_later() {
        // {'a': [1, 300, -2], 'b': ('x', None, True), 'c': <the same list>}
        let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01M\x2c\x01J\xfe\xff\xff\xffeX\x01\x00\x00\x00bX\x01\x00\x00\x00xN\x88\x87X\x01\x00\x00\x00ch\x02u.";
        let value = parse(bytes).unwrap();
        let list = PickleValue::List(vec![
            PickleValue::Int(1),
            PickleValue::Int(300),
            PickleValue::Int(-2),
        ]);
        assert_eq!(value.get("a"), Some(&list));
        assert_eq!(value.get("c"), Some(&list));
        assert_eq!(
            value.get("b"),
            Some(&PickleValue::Tuple(vec![
                PickleValue::Str("x".into()),
                PickleValue::None,
                PickleValue::Bool(true)
            ]))
        );
    }

    #[test]
    fn long1_and_binfloat() {
        // LONG1 of 8 bytes (a nanosecond time), LONG1 -1, BINFLOAT 1.5
        let bytes = b"\x80\x02(\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x19\x8a\x01\xffG\x3f\xf8\x00\x00\x00\x00\x00\x00l.";
        assert_eq!(
            parse(bytes).unwrap(),
            PickleValue::List(vec![
                PickleValue::Int(0x19 << 56),
                PickleValue::Int(-1),
                PickleValue::Float(1.5)
            ])
        );
    }

    #[test]
    fn torch_list_builders_stand_for_their_list() {
        let bytes = b"\x80\x02ctorch.jit._pickle\nbuild_intlist\n](K\x04K\x05e\x85R.";
        assert_eq!(
            parse(bytes).unwrap(),
            PickleValue::List(vec![PickleValue::Int(4), PickleValue::Int(5)])
        );
    }

    #[test]
    fn hostile_pickles_are_refused_not_panicking() {
        let cases: Vec<(&[u8], &str)> = vec![
            (b"\x80\x02X\xff\xff\xff\x7f", "length"),
            (
                b"\x80\x02cos\nsystem\n(X\x02\x00\x00\x00lst\x85R.",
                "os.system",
            ),
            (b"\x80\x02h\x05.", "never put"),
            (b"\x80\x02e.", "MARK"),
            (b"\x80\x02.", "empty"),
            (
                b"\x80\x02\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01.",
                "64 bits",
            ),
            (b"\x80\x02K", "cut short"),
            (b"\x80\x02\xff", "opcode"),
        ];
        for (bytes, expected) in cases {
            let error = parse(bytes).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn shared_lists_doubling_are_bounded() {
        // A list holding the previous one twice, 40 times: 2^40 values if expanded.
        let mut bytes = b"\x80\x02]q\x00".to_vec();
        for i in 0..40u8 {
            bytes.extend_from_slice(&[b']', b'(', b'h', i, b'h', i, b'e', b'q', i + 1]);
        }
        bytes.push(b'.');
        let error = parse(&bytes).unwrap_err();
        assert!(
            error.contains("deeper") || error.contains("values"),
            "{error}"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut bytes = b"\x80\x02".to_vec();
        bytes.extend(std::iter::repeat_n(b']', 100_000));
        bytes.extend(std::iter::repeat_n(b'a', 99_999));
        bytes.push(b'.');
        assert!(parse(&bytes).unwrap_err().contains("deeper"));
    }
}
