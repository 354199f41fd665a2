//! The `report` page in a real browser: headless Chromium draws it, every
//! picture must show coloured data where the page lays it out, and the
//! console must stay silent (the page's content security policy reports
//! anything it would have fetched or run there).
//!
//! Chromium is `COLLBENCH_TEST_CHROMIUM` (scripts/test.sh sets it; Debian's
//! `chromium` package, which scripts/test.sh installs), else `chromium`
//! on the PATH. Without either the test fails under CI (`CI` set) and is
//! skipped, loudly, elsewhere.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{run, scratch};

const VAR: &str = "COLLBENCH_TEST_CHROMIUM";
const WIDTH: u32 = 1400;
/// What the probe script logs, to show that console lines are captured.
const PROBE: &str = "collbench-report-probe";

/// The browser, or `None` (with a note) where none is installed outside CI.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!(
            "{VAR} is not set and no chromium is on the PATH, but CI is: CI must test the report page in a browser (apt-get install chromium; scripts/test.sh installs it and sets {VAR})"
        );
    }
    eprintln!(
        "\n*** SKIPPED: the report page's browser test: no chromium (set {VAR} or apt-get install chromium) ***\n"
    );
    None
}

/// Runs headless Chromium on `page` with `extra` flags, within a minute;
/// returns its stdout and its stderr (where the console goes).
fn browse(chromium: &Path, dir: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let stdout = dir.join("browser.out");
    let stderr = dir.join("browser.err");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = std::fs::read_to_string(&stdout).unwrap();
            let err = std::fs::read_to_string(&stderr).unwrap();
            assert!(status.success(), "chromium failed ({status}): {err}");
            return (out, err);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took over a minute on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The console lines of a Chromium log.
fn console(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// The page with the probe: a policy that lets one script run, which
/// writes every picture's box (page pixels) and the page's height into the
/// title. Nothing it does moves the layout.
fn with_probe(page: &str) -> String {
    let policy = "default-src 'none'; style-src 'unsafe-inline'";
    assert!(page.contains(policy), "the page's policy");
    let probe = format!(
        "<script>\nconsole.log('{PROBE}');\n\
         var boxes = Array.from(document.querySelectorAll('svg')).map(function (s) {{\n\
           var r = s.getBoundingClientRect();\n\
           return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height].map(Math.round).join(',');\n\
         }});\n\
         document.title = 'probe;' + document.documentElement.scrollHeight + ';' + boxes.join(';');\n\
         </script>\n</body>"
    );
    page.replacen(policy, &format!("{policy}; script-src 'unsafe-inline'"), 1)
        .replacen("</body>", &probe, 1)
}

/// Pixels of one box: how many are coloured (data: the palette's colours,
/// not the black, grey and white of axes, text and paper).
fn coloured_pixels(image: &Image, (x, y, w, h): (u32, u32, u32, u32)) -> usize {
    let mut coloured = 0;
    for row in y..(y + h).min(image.height) {
        for col in x..(x + w).min(image.width) {
            let (r, g, b) = image.pixel(col, row);
            let (max, min) = (r.max(g).max(b), r.min(g).min(b));
            if max - min > 60 {
                coloured += 1;
            }
        }
    }
    coloured
}

/// An RGB(A) screenshot.
struct Image {
    width: u32,
    height: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Image {
    fn read(path: &Path) -> Image {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut data = vec![0; reader.output_buffer_size().expect("a PNG's size")];
        let info = reader.next_frame(&mut data).expect("the PNG's pixels");
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("a screenshot in {other:?}"),
        };
        data.truncate(info.buffer_size());
        Image {
            width: info.width,
            height: info.height,
            channels,
            data,
        }
    }

    fn pixel(&self, x: u32, y: u32) -> (u8, u8, u8) {
        let i = (y as usize * self.width as usize + x as usize) * self.channels;
        (self.data[i], self.data[i + 1], self.data[i + 2])
    }
}

#[test]
fn the_report_page_draws_every_picture_in_a_browser_with_a_silent_console() {
    let Some(chromium) = chromium() else {
        return;
    };
    let started = Instant::now();
    let dir = scratch("report-browser");
    let page = dir.join("report.html");
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-22-h100vm-1n0g-ddp-validation/ddp.svg");
    let inputs = [
        "collbench-a.json",
        "mpi-4rank-oversubscribed.json",
        "collbench-soak-4cycles.json",
        model.to_str().unwrap(),
    ];
    let mut args = vec!["report", "-o", page.to_str().unwrap()];
    args.extend_from_slice(&inputs);
    run(&args).ok();
    let html = std::fs::read_to_string(&page).unwrap();
    // Two size plots per run, the soak timeline, the model's picture.
    let pictures = html.matches("<svg ").count();
    assert_eq!(pictures, 2 + 2 + 3 + 1);

    // Where the pictures are: the probe's copy, laid out the same.
    let probe_page = dir.join("probe.html");
    std::fs::write(&probe_page, with_probe(&html)).unwrap();
    let window = format!("--window-size={WIDTH},2000");
    let (dom, log) = browse(&chromium, &dir, &probe_page, &["--dump-dom".into(), window]);
    assert!(
        console(&log).iter().any(|l| l.contains(PROBE)),
        "the console is not captured: {log}"
    );
    let title = dom
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next())
        .expect("a title");
    let mut fields = title
        .strip_prefix("probe;")
        .expect("the probe ran")
        .split(';');
    let height: u32 = fields.next().unwrap().parse().unwrap();
    let boxes: Vec<(u32, u32, u32, u32)> = fields
        .map(|b| {
            let v: Vec<u32> = b.split(',').map(|n| n.parse().unwrap()).collect();
            (v[0], v[1], v[2], v[3])
        })
        .collect();
    assert_eq!(boxes.len(), pictures, "{title}");

    // The page itself, whole: its console must stay silent.
    let shot = dir.join("report.png");
    let (_, log) = browse(
        &chromium,
        &dir,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={WIDTH},{height}"),
        ],
    );
    assert_eq!(console(&log), Vec::<&str>::new(), "console output");
    let image = Image::read(&shot);
    assert_eq!((image.width, image.height), (WIDTH, height));
    for (i, b) in boxes.iter().enumerate() {
        assert!(b.2 >= 400 && b.3 >= 250, "picture {i} is drawn {b:?}");
        assert!(
            b.1 + b.3 <= height,
            "picture {i} {b:?} within the page of {height}"
        );
        let coloured = coloured_pixels(&image, *b);
        assert!(
            coloured >= 300,
            "picture {i} at {b:?} shows {coloured} coloured pixels: not drawn (screenshot {})",
            shot.display()
        );
    }
    // Beside a picture, in the page's right margin, is paper: the count
    // tells a drawn picture from an empty one.
    let (_, y, _, h) = boxes[0];
    let margin = (WIDTH - 40, y, 40, h);
    assert_eq!(coloured_pixels(&image, margin), 0, "the margin is blank");
    eprintln!(
        "report page in chromium: {pictures} pictures drawn, {height} px tall, {:.1} s; screenshot {}",
        started.elapsed().as_secs_f64(),
        shot.display()
    );
}

#[test]
fn wide_tables_and_fit_text_stay_inside_a_narrow_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = scratch("report-browser-narrow");
    let page = dir.join("report.html");
    // The widest content a page holds: every host-broadcast row, the
    // environment of a GPU run, fits, the skipped files' reasons.
    let gpu = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-25-h100vm-1n1g-gpu-smoke-2/sweeps/all-reduce-wall.json");
    let inputs = [
        "collbench-host-broadcast-2nodes.json",
        "nccl-2.19-all_reduce.log",
        gpu.to_str().unwrap(),
    ];
    let mut args = vec!["report", "-o", page.to_str().unwrap()];
    args.extend_from_slice(&inputs);
    run(&args).ok();
    let html = std::fs::read_to_string(&page).unwrap();
    // The probe opens every folded part, then measures the page's width.
    let policy = "default-src 'none'; style-src 'unsafe-inline'";
    let probe = html
        .replacen(policy, &format!("{policy}; script-src 'unsafe-inline'"), 1)
        .replacen(
            "</body>",
            "<script>\ndocument.querySelectorAll('details').forEach(function (d) { d.open = true; });\n\
             var wide = Array.from(document.querySelectorAll('body > *, section > *')).filter(function (e) {\n\
               return e.getBoundingClientRect().right > document.documentElement.clientWidth + 1;\n\
             }).map(function (e) { return e.tagName + '.' + e.className; });\n\
             document.title = 'probe;' + document.documentElement.scrollWidth + ';' + wide.join(',');\n\
             </script>\n</body>",
            1,
        );
    let probe_page = dir.join("probe.html");
    std::fs::write(&probe_page, probe).unwrap();
    let width = 800;
    let (dom, _) = browse(
        &chromium,
        &dir,
        &probe_page,
        &["--dump-dom".into(), format!("--window-size={width},1200")],
    );
    let title = dom
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next())
        .expect("a title");
    let mut fields = title
        .strip_prefix("probe;")
        .expect("the probe ran")
        .split(';');
    let scroll_width: u32 = fields.next().unwrap().parse().unwrap();
    let wide = fields.next().unwrap_or_default();
    assert!(
        scroll_width <= width && wide.is_empty(),
        "the page is {scroll_width} px wide in a {width} px window; wider than it: {wide}"
    );
}
