//! Printing to standard output that ends the process quietly when its reader has gone away
//! (`tt-agent events <run> | head`): the standard `println!` panics on a closed pipe. Every
//! module of this crate prints through the `println!` / `print!` defined here, which shadow the
//! standard ones. A closed pipe exits with 141, as a process killed by SIGPIPE would; any other
//! write error is reported on stderr and exits with 1.

use std::io::Write as _;

/// Writes `args` (and a newline) to standard output.
pub(crate) fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let result = out.write_fmt(args).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(error) = result {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("tt-agent: cannot write to standard output: {error}");
        std::process::exit(1);
    }
}

macro_rules! println {
    () => {
        $crate::output::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), true)
    };
}

macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*), false)
    };
}
