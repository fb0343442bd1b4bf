//! Charts as inline SVG, drawn on the server by plotters' SVG backend (which escapes
//! the text it writes).

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::explain::Fate;

const KEPT: RGBColor = RGBColor(37, 99, 235);
const CUT: RGBColor = RGBColor(217, 119, 6);
const REFUSED: RGBColor = RGBColor(163, 163, 163);
const RELEVANCE: RGBColor = RGBColor(147, 51, 234);
const GATE: RGBColor = RGBColor(220, 38, 38);
const SELECTION: RGBColor = RGBColor(22, 163, 74);
const FONT: &str = "sans-serif";
/// Right of the score curve: the room for the lines' labels, then for the legend.
const LINE_LABELS: i32 = 76;
const LEGEND: u32 = 250;

/// How a legend entry is drawn.
enum Marker {
    Circle(ShapeStyle),
    Triangle(ShapeStyle),
    Line(ShapeStyle),
}

/// One candidate on the score curve.
pub struct CurvePoint {
    pub score: f64,
    pub relevance: Option<f64>,
    pub fate: Fate,
}

/// Inline SVG needs no namespace: without it the page holds no URL at all.
fn inline(svg: String) -> String {
    svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1)
}

/// The score of every candidate by rank (kept, cut by the selection, refused by the
/// gate), each one's relevance, the gate's threshold (on relevance) and the
/// selection's cut (on score), both labelled with their values.
pub fn score_curve(
    points: &[CurvePoint],
    min_relevance: f64,
    cut: Option<(f64, &str)>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1040, 340)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = points.len().max(1) as f64;
        let top = points
            .iter()
            .map(|p| p.score.max(p.relevance.unwrap_or(0.0)))
            .fold(1.0_f64, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(LINE_LABELS as u32 + LEGEND)
            .x_label_area_size(36)
            .y_label_area_size(50)
            .build_cartesian_2d(0.5..n + 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("candidates, best score first")
            .y_desc("score / relevance")
            .x_labels(points.len().clamp(1, 20))
            .x_label_formatter(&|x| {
                if x.fract() == 0.0 {
                    format!("{x:.0}")
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.1}"))
            .light_line_style(RGBColor(238, 238, 238))
            .label_style((FONT, 12))
            .draw()?;
        let at = |i: usize| i as f64 + 1.0;
        chart.draw_series(LineSeries::new(
            points.iter().enumerate().map(|(i, p)| (at(i), p.score)),
            RGBColor(200, 200, 200).stroke_width(1),
        ))?;
        // The legend, drawn right of the plot and its line labels, where no point can be.
        let mut legend: Vec<(Marker, String)> = Vec::new();
        for (fate, color, filled) in [
            (Fate::Kept, KEPT, true),
            (Fate::Cut, CUT, false),
            (Fate::Refused, REFUSED, false),
        ] {
            let style = if filled {
                color.filled()
            } else {
                color.stroke_width(2)
            };
            chart.draw_series(
                points
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.fate == fate)
                    .map(|(i, p)| Circle::new((at(i), p.score), 5, style)),
            )?;
            legend.push((Marker::Circle(style), format!("score, {}", fate.name())));
        }
        chart.draw_series(points.iter().enumerate().filter_map(|(i, p)| {
            p.relevance
                .map(|r| TriangleMarker::new((at(i), r), 5, RELEVANCE.filled()))
        }))?;
        legend.push((Marker::Triangle(RELEVANCE.filled()), "relevance".into()));
        let span = [(0.5, min_relevance), (n + 0.5, min_relevance)];
        chart.draw_series(DashedLineSeries::new(span, 8, 5, GATE.stroke_width(2)))?;
        legend.push((
            Marker::Line(GATE.stroke_width(2)),
            if min_relevance > 0.0 {
                format!("gate: relevance ≥ {min_relevance:.3}")
            } else {
                format!("gate off (min_relevance {min_relevance:.3})")
            },
        ));
        if let Some((cutoff, strategy)) = cut {
            chart.draw_series(DashedLineSeries::new(
                [(0.5, cutoff), (n + 0.5, cutoff)],
                3,
                4,
                SELECTION.stroke_width(2),
            ))?;
            legend.push((
                Marker::Line(SELECTION.stroke_width(2)),
                format!("selection cut ({strategy}): score ≥ {cutoff:.3}"),
            ));
        }
        // Short labels in the right margin: the higher line's above it, the lower's
        // below, so that two close lines keep readable labels.
        let mut labels = vec![(min_relevance, format!("gate {min_relevance:.3}"), GATE)];
        if let Some((cutoff, _)) = cut {
            labels.push((cutoff, format!("cut {cutoff:.3}"), SELECTION));
        }
        let above = |i: usize| match labels.len() {
            2 => labels[i].0 > labels[1 - i].0 || (labels[i].0 == labels[1 - i].0 && i == 1),
            _ => true,
        };
        for (i, (y, text, color)) in labels.iter().enumerate() {
            let v = if above(i) { VPos::Bottom } else { VPos::Top };
            chart.draw_series(std::iter::once(Text::new(
                text.clone(),
                (n + 0.55, *y),
                (FONT, 13)
                    .into_font()
                    .color(color)
                    .pos(Pos::new(HPos::Left, v)),
            )))?;
        }
        let plot = chart.plotting_area();
        let x = plot.get_base_pixel().0 + plot.dim_in_pixel().0 as i32 + LINE_LABELS;
        for (row, (marker, label)) in legend.into_iter().enumerate() {
            let y = 24 + 20 * row as i32;
            match marker {
                Marker::Circle(style) => root.draw(&Circle::new((x + 8, y), 5, style))?,
                Marker::Triangle(style) => root.draw(&TriangleMarker::new((x + 8, y), 5, style))?,
                Marker::Line(style) => {
                    root.draw(&PathElement::new([(x, y), (x + 16, y)], style))?
                }
            }
            root.draw(&Text::new(
                label,
                (x + 24, y),
                (FONT, 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        root.present()?;
    }
    Ok(inline(svg))
}

/// Horizontal bars of values in `[0, 1]`, each labelled with its name and value.
pub fn bars(values: &[(&str, f64)]) -> Result<String> {
    let mut svg = String::new();
    {
        let height = 28 * values.len() as u32 + 40;
        let root = SVGBackend::with_string(&mut svg, (640, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = values.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(24)
            .build_cartesian_2d(0.0..1.0, 0.0..n)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(6)
            .x_label_formatter(&|x| format!("{x:.1}"))
            .light_line_style(RGBColor(238, 238, 238))
            .label_style((FONT, 12))
            .draw()?;
        for (i, (name, value)) in values.iter().enumerate() {
            let y = n - i as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.8), (value.clamp(0.0, 1.0), y - 0.2)],
                RGBColor(191, 219, 254).filled(),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{name}  {value:.3}"),
                (0.01, y - 0.5),
                (FONT, 13)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            )))?;
        }
        root.present()?;
    }
    Ok(inline(svg))
}
