//! A figure as an SVG: each series a line through its medians, with bars from the 25th to the
//! 75th percentile; a dashed horizontal reference line where the figure has one.

use crate::Figure;
use plotters::prelude::*;

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
];

/// Draws `f` into an SVG document.
pub fn svg(f: &Figure) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (720, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let points = f.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
        for (x, p) in points {
            x0 = x0.min(*x);
            x1 = x1.max(*x);
            y1 = y1.max(p.p75).max(p.median);
        }
        if let Some((r, _)) = f.reference {
            y1 = y1.max(r);
        }
        if x0 > x1 {
            return Err(format!("{}: no points", f.id));
        }
        let pad = ((x1 - x0) * 0.08).max(0.5);
        let mut chart = ChartBuilder::on(&root)
            .caption(&f.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0f64..(y1 * 1.4).max(1.0))
            .map_err(|e| e.to_string())?;
        let names = f.x_names.clone();
        let label = move |x: &f64| match &names {
            Some(n) if (x - x.round()).abs() < 1e-9 => n.get(x.round() as usize).cloned().unwrap_or_default(),
            Some(_) => String::new(),
            None => format!("{x}"),
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(f.x_label.as_str()).y_desc(f.y_label.as_str()).x_label_formatter(&label);
        if let Some(n) = &f.x_names {
            mesh.x_labels(n.len() + 2);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for (k, s) in f.series.iter().enumerate() {
            let c = COLOURS[k % COLOURS.len()];
            // A small offset per series, so that bars at the same x do not hide each other.
            // A curve of one seed (a time sequence) has no spread to show.
            let spread = s.points.iter().any(|(_, p)| p.n > 1);
            let dx = if spread { (k as f64 - (f.series.len() as f64 - 1.0) / 2.0) * pad * 0.15 } else { 0.0 };
            chart
                .draw_series(LineSeries::new(s.points.iter().map(|(x, p)| (x + dx, p.median)), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            if spread {
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .map(|(x, p)| ErrorBar::new_vertical(x + dx, p.p25, p.median, p.p75, c.filled(), 8)),
                    )
                    .map_err(|e| e.to_string())?;
            }
        }
        if let Some((r, name)) = &f.reference {
            let r = *r;
            chart
                .draw_series(DashedLineSeries::new([(x0 - pad, r), (x1 + pad, r)], 6, 4, BLACK.stroke_width(1)))
                .map_err(|e| e.to_string())?
                .label(name.as_str())
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}
