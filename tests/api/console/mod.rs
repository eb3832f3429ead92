//! The operator console in a real browser (Debian's `chromium` through
//! `chromedriver`, driven over WebDriver by `fantoccini`), and over plain
//! HTTP where a browser cannot show the point (a foreign `Origin`).
//!
//! [`harness`] starts the driver and the browser; each browser test takes a
//! screenshot of every page it visits at 1280×800 and 390×844 under
//! `target/console-screenshots/`, checking there is no horizontal scroll.

pub mod harness;

mod companies;
mod documents;
mod hostile;
mod overview;
mod security;
