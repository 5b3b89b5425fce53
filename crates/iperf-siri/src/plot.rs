//! `--plot FILE.svg`: the empirical CDF of request delays, one step line per series.

use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

/// A "nice" axis end at or above `max`: 1, 2 or 5 times a power of ten.
pub(crate) fn nice(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|v| *v >= max).unwrap_or(10.0 * p)
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A tick label without float noise (0.30000000000000004 → 0.3).
pub(crate) fn tick(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The SVG document: `series` are (label, delays in ms) plotted against `xlabel`; empty
/// series are listed in the legend as "no answer".
pub fn cdf_svg(title: &str, xlabel: &str, series: &[(String, Vec<f64>)]) -> String {
    let xmax = nice(series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0, f64::max));
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |v: f64| LEFT + v / xmax * pw;
    let y = |f: f64| TOP + (1.0 - f) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{}" y="18" text-anchor="middle" font-size="14">{}</text>"#, W / 2.0, escape(title));
    // Axes and grid.
    for k in 0..=5 {
        let f = f64::from(k) / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{f:.1}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y(f) + 4.0,
            yy = y(f)
        );
        let v = xmax * f;
        let _ = writeln!(
            s,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#ddd"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            tick(v),
            xx = x(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 10.0,
        escape(xlabel)
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">CDF</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    for (k, (label, values)) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let mut v = values.clone();
        v.sort_by(f64::total_cmp);
        if !v.is_empty() {
            let n = v.len() as f64;
            let mut d = format!("M{:.1},{:.1}", x(0.0), y(0.0));
            for (i, val) in v.iter().enumerate() {
                let _ = write!(d, " H{:.1} V{:.1}", x(*val), y((i + 1) as f64 / n));
            }
            let _ = writeln!(s, r#"<path d="{d}" fill="none" stroke="{colour}" stroke-width="2"/>"#);
        }
        let ly = TOP + 16.0 + 16.0 * k as f64;
        let text = if v.is_empty() { format!("{label} (no answer)") } else { label.clone() };
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - RIGHT - 200.0,
            ly - 4.0,
            W - RIGHT - 180.0,
            ly - 4.0,
            W - RIGHT - 175.0,
            ly,
            escape(&text)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round() {
        assert_eq!(nice(17.0), 20.0);
        assert_eq!(nice(430.0), 500.0);
        assert_eq!(nice(1000.0), 1000.0);
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(tick(0.1 * 3.0), "0.3");
        assert_eq!(tick(20.0), "20");
    }

    #[test]
    fn one_step_per_delay_and_labels_escaped() {
        let svg = cdf_svg("a <b>", "ms", &[("x&y".into(), vec![30.0, 10.0, 20.0]), ("none".into(), vec![])]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches(" H").count(), 3, "{svg}");
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("x&amp;y") && svg.contains("none (no answer)"));
        // The last step reaches the top of the plot (CDF = 1).
        assert!(svg.contains(&format!("V{:.1}\"", TOP)), "{svg}");
    }
}
