use std::process::ExitCode;

fn main() -> ExitCode {
    scion::cli::main()
}
