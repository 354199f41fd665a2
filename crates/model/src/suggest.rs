//! `--alias` suggestions for course rows left without a partner: a pair is
//! suggested only when its names mean the same by their word tokens (with
//! the usual abbreviations of transformer modules: `wte` is the token
//! embedding, `ln_f` the final norm) and each is the other's one best match.

/// Abbreviations and spellings, and the words they stand for.
const WORDS: [(&str, &[&str]); 12] = [
    ("wte", &["token", "embedding"]),
    ("wpe", &["position", "embedding"]),
    ("tok", &["token"]),
    ("pos", &["position"]),
    ("emb", &["embedding"]),
    ("embed", &["embedding"]),
    ("embeddings", &["embedding"]),
    ("ln", &["norm"]),
    ("layernorm", &["norm"]),
    ("rmsnorm", &["norm"]),
    ("f", &["final"]),
    ("attn", &["attention"]),
];

/// Words that say nothing about which layer a row is.
const IGNORED: [&str; 4] = ["grad", "layer", "weight", "bias"];

/// The meaning tokens of a name: split at non-alphanumerics, case changes
/// and digit runs, lower-cased, abbreviations expanded, filler dropped.
fn tokens(name: &str) -> Vec<String> {
    let mut raw: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        let boundary = match prev {
            None => false,
            Some(p) => {
                !c.is_alphanumeric()
                    || (p.is_lowercase() && c.is_uppercase())
                    || (p.is_ascii_digit() != c.is_ascii_digit())
            }
        };
        if boundary && !word.is_empty() {
            raw.push(std::mem::take(&mut word).to_lowercase());
        }
        if c.is_alphanumeric() {
            word.push(c);
        }
        prev = Some(c);
    }
    if !word.is_empty() {
        raw.push(word.to_lowercase());
    }
    // `LayerNorm` splits into layer + norm; the joined spelling is a word too.
    let mut out = Vec::new();
    for w in raw {
        match WORDS.iter().find(|(abbr, _)| *abbr == w) {
            Some((_, words)) => out.extend(words.iter().map(|s| s.to_string())),
            None if IGNORED.contains(&w.as_str()) => {}
            None => out.push(w),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// How alike two names are: shared tokens over all tokens (0 to 1), and 0
/// when their numbers differ (`block 1` is never `block_10`).
fn similarity(a: &[String], b: &[String]) -> f64 {
    let numbers = |t: &[String]| -> Vec<String> {
        t.iter()
            .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
            .cloned()
            .collect()
    };
    if numbers(a) != numbers(b) {
        return 0.0;
    }
    let shared = a.iter().filter(|w| b.contains(w)).count();
    let all = a.len() + b.len() - shared;
    if all == 0 {
        0.0
    } else {
        shared as f64 / all as f64
    }
}

/// Pairs (sizes name, times name) that mean the same: similarity at least
/// 1/2, each the other's single best match.
pub fn aliases(sizes: &[&str], times: &[&str]) -> Vec<(String, String)> {
    let st: Vec<Vec<String>> = sizes.iter().map(|n| tokens(n)).collect();
    let tt: Vec<Vec<String>> = times.iter().map(|n| tokens(n)).collect();
    let score = |i: usize, j: usize| similarity(&st[i], &tt[j]);
    // The single best partner of row `i` among `n`, if one stands out.
    let unique_best = |n: usize, f: &dyn Fn(usize) -> f64| -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        let mut tied = false;
        for k in 0..n {
            let s = f(k);
            match best {
                Some((_, b)) if s == b => tied = true,
                Some((_, b)) if s < b => {}
                _ => {
                    best = Some((k, s));
                    tied = false;
                }
            }
        }
        best.filter(|&(_, s)| s >= 0.5 && !tied).map(|(k, _)| k)
    };
    let mut pairs = Vec::new();
    for i in 0..sizes.len() {
        let Some(j) = unique_best(times.len(), &|j| score(i, j)) else {
            continue;
        };
        if unique_best(sizes.len(), &|k| score(k, j)) == Some(i) {
            pairs.push((sizes[i].to_string(), times[j].to_string()));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_course_pair_is_joined_by_meaning() {
        let sizes = ["Token embedding", "Position embedding", "LayerNorm final"];
        let times = ["ln_f", "wpe", "wte"];
        assert_eq!(
            aliases(&sizes, &times),
            [
                ("Token embedding".to_string(), "wte".to_string()),
                ("Position embedding".to_string(), "wpe".to_string()),
                ("LayerNorm final".to_string(), "ln_f".to_string()),
            ]
        );
    }

    #[test]
    fn nothing_is_suggested_without_a_clear_meaning() {
        // No shared meaning, a tie, and numbers that differ.
        assert!(aliases(&["Token embedding"], &["ln_f"]).is_empty());
        assert!(aliases(&["embedding"], &["wte", "wpe"]).is_empty());
        assert!(aliases(&["Block 1"], &["block_10"]).is_empty());
        assert_eq!(tokens("LayerNorm final"), ["final", "norm"]);
        assert_eq!(tokens("blocks.0.attn"), ["0", "attention", "blocks"]);
    }
}
