pub fn top(_: crate::cli::TopArgs) -> anyhow::Result<i32> {
    anyhow::bail!("todo")
}
