fn main() {
    std::process::exit(emisor::cli::run());
}
