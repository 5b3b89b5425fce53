//! The papers' figures, regenerated in the simulator (issue 22): each figure is a set of
//! series over an x axis, every point the spread of one measure over many seeds (median, 25th
//! and 75th percentiles, min and max), drawn as an SVG (`plot`) and written as a Markdown table
//! beside what the paper reports (`Figure::markdown`). `multimob` holds the MultiMob paper's.
//!
//! Run: `cargo run --release -p figures -- --out figures/` (the index is `figures/README.md`).

use mpsim::{PathConfig, RadioProfile};
use std::cell::Cell;

pub mod download;
pub mod multimob;
pub mod plot;
pub mod siri;
pub mod uplink;
pub mod walk;

thread_local! {
    /// The phone's cellular radio in the figures this thread simulates (see [`with_radio`]).
    static RADIO: Cell<Option<RadioProfile>> = const { Cell::new(None) };
}

/// Runs `f` with `radio` on every cellular path of the figures it simulates (issue 32: the
/// figures are published with the LTE radio, and each page says what it changed against a run
/// without it).
pub fn with_radio<T>(radio: Option<RadioProfile>, f: impl FnOnce() -> T) -> T {
    let old = RADIO.with(|r| r.replace(radio));
    let out = f();
    RADIO.with(|r| r.set(old));
    out
}

/// `paths` with the current radio (see [`with_radio`]) on each cellular one.
pub fn radio_paths(mut paths: Vec<PathConfig>) -> Vec<PathConfig> {
    if let Some(r) = RADIO.with(Cell::get) {
        for p in paths.iter_mut().filter(|p| p.iface == mpcore::Iface::Cellular) {
            p.radio = Some(r);
        }
    }
    paths
}

/// What the radio changed in figure `radio` against the same figure without it (`plain`): the
/// medians that moved most, or, for a figure with a table of its own, that table without the
/// radio.
pub fn radio_change(plain: &Figure, radio: &Figure) -> String {
    if let Some(t) = &plain.table {
        return format!("the same table without the radio:\n\n{t}");
    }
    let mut moves: Vec<(f64, String)> = Vec::new();
    for (a, b) in plain.series.iter().zip(&radio.series) {
        for ((x, p), (_, q)) in a.points.iter().zip(&b.points) {
            let d = q.median - p.median;
            if d.is_finite() {
                let at = radio.x_name(*x);
                moves.push((d, format!("{} at {} {at}: {:.1} -> {:.1}", a.name, radio.x_label, p.median, q.median)));
            }
        }
    }
    moves.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    let base = plain.series.iter().flat_map(|s| s.points.iter().map(|p| p.1.median.abs()));
    let scale = base.fold(0.0, f64::max);
    match moves.first() {
        None => "no point to compare.".into(),
        Some((d, _)) if d.abs() <= 0.01 * scale.max(1e-9) => {
            "no median moved by more than 1% of the figure's largest: no measured wait met an idle radio here \
             (a join at the start left it connected, or cellular was not used), or, where the figure is a \
             difference between two setups, both paid the same promotion."
                .into()
        }
        Some(_) => {
            let top: Vec<&str> =
                moves.iter().take(3).filter(|m| m.0.abs() > 0.01 * scale).map(|m| m.1.as_str()).collect();
            format!("the medians that moved most with it ({}): {}.", radio.y_label, top.join("; "))
        }
    }
}

/// The spread of one measure over seeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
    /// How many samples.
    pub n: usize,
}

impl Spread {
    /// The spread of `v` (NaN everywhere if `v` is empty). Percentiles by the nearest rank.
    pub fn of(v: &[f64]) -> Self {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
        s.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if s.is_empty() {
                f64::NAN
            } else {
                s[((s.len() - 1) as f64 * q).round() as usize]
            }
        };
        Self { min: at(0.0), p25: at(0.25), median: at(0.5), p75: at(0.75), max: at(1.0), n: s.len() }
    }
}

/// One curve: a name and a spread per x.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, Spread)>,
}

/// One figure: what it shows, its series, and what the paper says beside what we measured.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File name (without extension), e.g. `multimob-fig3`.
    pub id: &'static str,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Names for the x values, where x is a category (`None`: numbers).
    pub x_names: Option<Vec<String>>,
    pub series: Vec<Series>,
    /// A horizontal reference line (value, label), e.g. one RTT.
    pub reference: Option<(f64, String)>,
    /// How the simulation was set up.
    pub setup: String,
    /// A table of its own in place of the medians per x (a time-sequence plot of one seed,
    /// whose points are no spread over seeds, summarises the seeds here instead).
    pub table: Option<String>,
    /// What the paper reports, and what we find beside it.
    pub paper: String,
    pub ours: String,
    /// What the phone's radio changed (against the same figure without it).
    pub radio: Option<String>,
}

impl Figure {
    /// The figure's section of the index: the plot, the setup, the table of medians with their
    /// spread, and the comparison with the paper.
    pub fn markdown(&self) -> String {
        let mut out = format!("## {}\n\n![{}]({}.svg)\n\n{}\n\n", self.title, self.title, self.id, self.setup);
        let radio = self.radio.as_ref().map_or(String::new(), |r| format!("**The radio:** {r}\n\n"));
        if let Some(table) = &self.table {
            out.push_str(&format!("{table}\n\n**Paper:** {}\n\n**Here:** {}\n\n{radio}", self.paper, self.ours));
            return out;
        }
        out.push_str(&format!("| {} |", self.x_label));
        for s in &self.series {
            out.push_str(&format!(" {} |", s.name));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.series.len()));
        out.push('\n');
        let xs: Vec<f64> = self.series.first().map(|s| s.points.iter().map(|p| p.0).collect()).unwrap_or_default();
        for (k, x) in xs.iter().enumerate() {
            out.push_str(&format!("| {} |", self.x_name(*x)));
            for s in &self.series {
                match s.points.get(k) {
                    Some((_, p)) => out.push_str(&format!(
                        " {:.1} ({:.1}-{:.1}; {:.1}-{:.1}) |",
                        p.median, p.p25, p.p75, p.min, p.max
                    )),
                    None => out.push_str(" |"),
                }
            }
            out.push('\n');
        }
        let n = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.1.n)).min().unwrap_or(0);
        out.push_str(&format!(
            "\nEach cell: median (25th-75th percentile; min-max) over {n} seeds, {}.\n\n**Paper:** {}\n\n**Here:** {}\n\n{radio}",
            self.y_label, self.paper, self.ours
        ));
        out
    }

    /// The name of x value `x`.
    pub fn x_name(&self, x: f64) -> String {
        match &self.x_names {
            Some(names) => names.get(x.round() as usize).cloned().unwrap_or_default(),
            None => format!("{x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_by_nearest_rank() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0, f64::NAN]);
        assert_eq!((s.min, s.p25, s.median, s.p75, s.max, s.n), (1.0, 2.0, 3.0, 4.0, 5.0, 5));
        assert!(Spread::of(&[]).median.is_nan());
    }
}
