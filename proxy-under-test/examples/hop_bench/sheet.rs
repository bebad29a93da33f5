//! The figures of a run: one value per (figure, path, round); medians over the rounds, same-round
//! ratios (the median of each round's ratio), and the Markdown tables with the targets.

use std::fmt::Write as _;

/// A target on a same-run ratio (reference / Envoy, the comparison: `envoy-full`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target {
    AtLeast(f64),
    AtMost(f64),
}

impl Target {
    fn met(self, ratio: f64) -> bool {
        match self {
            Self::AtLeast(t) => ratio >= t,
            Self::AtMost(t) => ratio <= t,
        }
    }

    fn text(self) -> String {
        match self {
            Self::AtLeast(t) => format!("≥ {t:.1}"),
            Self::AtMost(t) => format!("≤ {t:.1}"),
        }
    }
}

struct Row {
    figure: String,
    /// Per path, one value per round (`NaN`: not measured for that path).
    values: Vec<Vec<f64>>,
    target: Option<Target>,
    decimals: usize,
}

/// Every figure of the run.
pub(crate) struct Sheet {
    pub(crate) paths: Vec<String>,
    rows: Vec<Row>,
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub(crate) fn percentile(v: &mut [std::time::Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e6
}

fn fmt(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = format!("{v:.decimals$}");
    // Thousands separators for the integer part.
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

impl Sheet {
    pub(crate) fn new(paths: Vec<String>) -> Self {
        Self {
            paths,
            rows: Vec::new(),
        }
    }

    /// Records `v` for `figure` on `path` (declared on first use with its target and format).
    pub(crate) fn add(
        &mut self,
        figure: &str,
        target: Option<Target>,
        decimals: usize,
        path: usize,
        v: f64,
    ) {
        let n = self.paths.len();
        let i = match self.rows.iter().position(|r| r.figure == figure) {
            Some(i) => i,
            None => {
                self.rows.push(Row {
                    figure: figure.to_owned(),
                    values: vec![Vec::new(); n],
                    target,
                    decimals,
                });
                self.rows.len() - 1
            }
        };
        self.rows[i].values[path].push(v);
    }

    /// Median over the rounds of `path`'s value over `base`'s value in the same round.
    fn ratio(row: &Row, path: usize, base: usize) -> f64 {
        let r: Vec<f64> = row.values[path]
            .iter()
            .zip(&row.values[base])
            .map(|(a, b)| a / b)
            .collect();
        median(&r)
    }

    /// The table: medians per path, then for each base (Envoy variants; the first carries the
    /// target) each path of `compared`'s same-round ratio to it and whether the first compared
    /// path meets the target against it.
    pub(crate) fn markdown(&self, compared: &[usize], bases: &[usize]) -> String {
        let mut s = String::from("| figure |");
        for p in &self.paths {
            let _ = write!(s, " {p} |");
        }
        for (j, &b) in bases.iter().enumerate() {
            for &c in compared {
                let _ = write!(s, " {} / {} |", self.paths[c], self.paths[b]);
            }
            if j == 0 {
                s.push_str(" target |");
            }
            let _ = write!(s, " met vs {} |", self.paths[b]);
        }
        s.push_str("\n|---|");
        let extra = bases.len() * (compared.len() + 1) + usize::from(!bases.is_empty());
        for _ in 0..self.paths.len() + extra {
            s.push_str("---:|");
        }
        s.push('\n');
        for row in &self.rows {
            let _ = write!(s, "| {} |", row.figure);
            for v in &row.values {
                let _ = write!(s, " {} |", fmt(median(v), row.decimals));
            }
            for (j, &b) in bases.iter().enumerate() {
                for &c in compared {
                    let _ = write!(s, " {} |", fmt(Self::ratio(row, c, b), 2));
                }
                if j == 0 {
                    let t = row.target.map(Target::text).unwrap_or_default();
                    let _ = write!(s, " {t} |");
                }
                let met = match (row.target, compared.first()) {
                    (Some(t), Some(&c)) => {
                        let r = Self::ratio(row, c, b);
                        if !r.is_finite() {
                            "–"
                        } else if t.met(r) {
                            "yes"
                        } else {
                            "**no**"
                        }
                    }
                    _ => "",
                };
                let _ = write!(s, " {met} |");
            }
            s.push('\n');
        }
        s
    }
}
