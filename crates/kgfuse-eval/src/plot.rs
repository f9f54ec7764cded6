//! A recall-versus-context-size chart as a small hand-written SVG: one labelled
//! point per strategy, so the trade-off between finding the gold and the amount of
//! text an agent must read is visible at a glance.

use crate::EvalReport;
use std::fmt::Write as _;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 420.0;
const MARGIN: f64 = 60.0;

/// The chart for the strategies of `report`.
pub fn recall_vs_tokens_svg(report: &EvalReport) -> String {
    let max_tokens = report
        .strategies
        .values()
        .map(|s| s.avg_context_tokens)
        .fold(1.0_f64, f64::max)
        * 1.1;
    let x = |tokens: f64| MARGIN + (WIDTH - 2.0 * MARGIN) * tokens / max_tokens;
    let y = |recall: f64| HEIGHT - MARGIN - (HEIGHT - 2.0 * MARGIN) * recall;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{MARGIN}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{MARGIN}\" y1=\"{MARGIN}\" x2=\"{MARGIN}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{xl}\" text-anchor=\"middle\">average context tokens</text>\n\
         <text x=\"16\" y=\"{cy}\" transform=\"rotate(-90 16 {cy})\" text-anchor=\"middle\">recall@{k}</text>\n",
        b = HEIGHT - MARGIN,
        r = WIDTH - MARGIN,
        cx = WIDTH / 2.0,
        xl = HEIGHT - 20.0,
        cy = HEIGHT / 2.0,
        k = report.k,
    );
    for tick in 0..=5 {
        let recall = f64::from(tick) / 5.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{recall:.1}</text>",
            MARGIN - 6.0,
            y(recall) + 4.0
        );
        let tokens = max_tokens * f64::from(tick) / 5.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{tokens:.0}</text>",
            x(tokens),
            HEIGHT - MARGIN + 16.0
        );
    }
    for (name, scores) in &report.strategies {
        let (px, py) = (x(scores.avg_context_tokens), y(scores.recall_at_k));
        let _ = writeln!(
            svg,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"steelblue\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            px + 8.0,
            py - 6.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StrategyScores;

    #[test]
    fn every_strategy_is_a_labelled_point() {
        let mut report = EvalReport {
            k: 5,
            ..EvalReport::default()
        };
        for (name, recall) in [("flat", 0.4), ("domain", 0.8)] {
            report.strategies.insert(
                name.into(),
                StrategyScores {
                    recall_at_k: recall,
                    avg_context_tokens: 300.0,
                    ..StrategyScores::default()
                },
            );
        }
        let svg = recall_vs_tokens_svg(&report);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains(">domain</text>") && svg.contains("recall@5"));
    }
}
