//! The page around the sections: one self-contained HTML document (inline
//! CSS and SVG, a content security policy that lets it load and run
//! nothing), a summary of every run first, then each run, then the
//! pictures given as SVG files.
use analysis::html::escape;
use analysis::render::{self, or_dash, Align, HtmlRow, Table};
use analysis::stat::Stat;
use schema::RunStatus;

use super::gather::{Picture, Skipped};
use super::section::{list, Section};

/// What the page shows.
pub struct Contents<'a> {
    pub inputs: &'a [std::path::PathBuf],
    pub stat: Stat,
    pub sections: &'a [Section],
    pub pictures: &'a [Picture],
    pub skipped: &'a [Skipped],
}

/// Nothing is fetched or run: styles are inline, pictures inline SVG.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

const STYLE: &str = "
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1280px; padding: 0 1em; color: #1a1a1a; line-height: 1.4; }
h1 { margin-bottom: 0.2em; }
h2 { border-top: 2px solid #0072b2; padding-top: 0.6em; margin-top: 2em; }
h3 { margin-top: 1.4em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; display: block; max-width: 100%; overflow-x: auto; }
th, td { border-bottom: 1px solid #ddd; padding: 0.15em 0.6em; white-space: nowrap; }
th { background: #f0f4f8; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
td.c, th.c { text-align: center; }
td.l, th.l { text-align: left; }
tr.warn td { background: #fff1d6; }
tr.warn:has(+ tr.note) td { border-bottom: none; }
tr.note td { background: #fff1d6; color: #a33c00; white-space: normal; padding-left: 2em; }
.scroll { overflow-x: auto; max-height: 40em; overflow-y: auto; }
.warnings { background: #fff1d6; border-left: 5px solid #d55e00; padding: 0.4em 1em; margin: 0.8em 0; }
.notes { color: #444; font-size: 0.9em; }
.status { background: #d55e00; color: #fff; font-weight: bold; padding: 0.5em 1em; }
p.warn, span.warn { color: #a33c00; font-weight: bold; }
p.title { font-family: monospace; color: #333; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; overflow-wrap: anywhere; }
h2, p, li, summary { overflow-wrap: anywhere; }
figure.plot { margin: 0.5em 0; }
figure.plot svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
.top { font-size: 0.85em; }
";

/// The whole document.
pub fn page(contents: &Contents) -> String {
    let runs = contents.sections.len();
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>collbench report: {runs} run(s)</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>collbench report</h1>\n<p>{runs} run(s) and {} picture(s) from {}, shown by collbench-analyze {}; times are the {} of each size's iterations, bandwidths follow them.</p>\n",
        contents.pictures.len(),
        escape(
            &contents
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        env!("CARGO_PKG_VERSION"),
        contents.stat,
    );
    out.push_str(&summary(contents));
    for section in contents.sections {
        out.push_str(&section.html);
    }
    for (i, picture) in contents.pictures.iter().enumerate() {
        out.push_str(&format!(
            "<section id=\"picture-{}\">\n<h2>{}</h2>\n",
            i + 1,
            escape(&picture.file.display().to_string())
        ));
        if !picture.embedded.dropped.is_empty() {
            out.push_str(&format!(
                "<p class=\"warn\">Left out of this picture: {}.</p>\n",
                escape(&picture.embedded.dropped.join(", "))
            ));
        }
        out.push_str(&format!(
            "<figure class=\"plot\">\n{}</figure>\n</section>\n",
            picture.embedded.svg
        ));
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The table of every run, the pictures, what was skipped (folded: the
/// list may be long) and where the model comparisons come from.
fn summary(contents: &Contents) -> String {
    let mut table = Table::new(&[
        ("run", Align::Left),
        ("collective", Align::Left),
        ("ranks", Align::Right),
        ("status", Align::Left),
        ("peak busbw (GB/s)", Align::Right),
        ("at size", Align::Right),
        ("warnings", Align::Right),
    ]);
    for s in contents.sections {
        table.push(vec![
            s.label.clone(),
            s.collectives.clone(),
            s.world_size.to_string(),
            s.status.to_string(),
            match &s.peak {
                Ok(peak) => or_dash(peak.as_ref(), |p| render::gbps(p.0)),
                Err(why) => format!("— ({why})"),
            },
            match &s.peak {
                Ok(peak) => or_dash(peak.as_ref(), |p| p.1.clone()),
                Err(_) => "—".to_string(),
            },
            s.warnings.to_string(),
        ]);
    }
    let sections = contents.sections;
    let mut out = String::from("<section id=\"summary\">\n<h2>Summary</h2>\n");
    if !sections.is_empty() {
        out.push_str(&table.html_with(|i| HtmlRow {
            flagged: sections[i].status != RunStatus::Complete || sections[i].warnings > 0,
            link: Some(format!("#{}", sections[i].anchor)),
            note: None,
        }));
    }
    if !contents.pictures.is_empty() {
        let items: String = contents
            .pictures
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "<li><a href=\"#picture-{}\">{}</a></li>\n",
                    i + 1,
                    escape(&p.file.display().to_string())
                )
            })
            .collect();
        out.push_str(&format!("<p>Pictures:</p>\n<ul>\n{items}</ul>\n"));
    }
    out.push_str(
        "<p class=\"notes\">Model comparisons and timelines (<code>ddp</code>, <code>fsdp</code>, <code>zero</code>, <code>pipeline</code>) are produced by their own commands with <code>--plot</code>, <code>--timeline</code> and <code>--diagram</code>; pass the SVG files they write to <code>report</code> to include them here.</p>\n",
    );
    if !contents.skipped.is_empty() {
        let reasons: Vec<String> = contents.skipped.iter().map(|s| s.reason.clone()).collect();
        out.push_str(&format!(
            "<details><summary>{} file(s) skipped, each with why it was not read</summary>\n{}</details>\n",
            reasons.len(),
            list(&reasons)
        ));
    }
    out.push_str("</section>\n");
    out
}
