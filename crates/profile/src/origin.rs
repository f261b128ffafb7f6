//! Whose code a managed method is: the program's own ("user code") or the framework's.
//!
//! Decided by where its assembly was loaded from, not by its name (`Mono.CSharp` in `mcs.exe` is
//! the compiler a user runs; `Newtonsoft.Json` beside an app is the app's):
//!
//! 1. an assembly named on the command line (`dotnet App.dll`, `mono /usr/lib/mono/4.5/mcs.exe`)
//!    is user code, wherever it is;
//! 2. an assembly loaded from a runtime's own directories is framework: a .NET install's shared
//!    frameworks (`…/shared/Microsoft.NETCore.App/8.0.4/`, `…/shared/Microsoft.AspNetCore.App/…`)
//!    and Mono's class libraries and GAC (`…/lib/mono/4.5/`, `…/lib/mono/gac/`);
//! 3. anything else is user code — except, where the location cannot tell (an assembly without a
//!    file, or a self-contained app, which copies the runtime into its own directory), an
//!    assembly whose name is the runtime's (`System`, `System.*`, `Microsoft.*`, `mscorlib`,
//!    `netstandard`, `WindowsBase`).
//!
//! The agent applies this to choose what `--mode tracing` traces by default, the controller to
//! mark each recorded method (the profile's `framework` extension), and reports to fold what the
//! user did not write (`crate::view`).

use std::path::{Component, Path, PathBuf};

/// Whether a managed method of `assembly`, loaded from `path` (empty when unknown), is framework
/// code; `programs` are the files the command line named, as [`programs`] gives them.
pub fn is_framework(path: &str, assembly: &str, programs: &[String]) -> bool {
    if !path.is_empty() && programs.iter().any(|p| p == path) {
        return false;
    }
    runtime_directory(path) || framework_name(assembly)
}

/// True for a path inside a runtime's own directories (rule 2).
pub fn runtime_directory(path: &str) -> bool {
    let dirs: Vec<&str> = path.split('/').collect();
    let Some(parents) = dirs.len().checked_sub(1).map(|n| &dirs[..n]) else { return false };
    // <dotnet root>/shared/<framework>/<version>/<file>
    let dotnet =
        parents.len() >= 3 && parents[parents.len() - 3] == "shared" && parents[parents.len() - 2].contains('.');
    // <prefix>/lib/mono/<profile or gac>/…
    let mono = parents.windows(2).any(|w| w == ["lib", "mono"]);
    dotnet || mono
}

/// The runtime's assembly names, for assemblies whose location cannot tell (rule 3).
pub fn framework_name(assembly: &str) -> bool {
    matches!(assembly, "System" | "mscorlib" | "netstandard" | "WindowsBase")
        || assembly.starts_with("System.")
        || assembly.starts_with("Microsoft.")
}

/// The files a command line names, as absolute paths (relative ones resolved against `cwd`),
/// each both as written and with symbolic links resolved, for [`is_framework`].
pub fn programs(command: &[String], cwd: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for arg in command {
        if arg.is_empty() || arg.starts_with('-') {
            continue;
        }
        let path = normalized(&cwd.join(arg));
        if !path.is_file() {
            continue;
        }
        found.extend(path.to_str().map(str::to_string));
        if let Some(real) = std::fs::canonicalize(&path).ok().and_then(|p| p.to_str().map(str::to_string)) {
            found.push(real);
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `path` with `.` and `..` taken out lexically (`/a/./b/../c` → `/a/c`).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORECLR: &str = "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.4/System.Private.CoreLib.dll";

    #[test]
    fn runtime_directories_are_framework() {
        assert!(is_framework(CORECLR, "System.Private.CoreLib", &[]));
        assert!(is_framework("/opt/dn/shared/Microsoft.AspNetCore.App/8.0.4/Microsoft.AspNetCore.dll", "x", &[]));
        assert!(is_framework("/usr/lib/mono/4.5/mscorlib.dll", "mscorlib", &[]));
        assert!(is_framework(
            "/usr/lib/mono/gac/Mono.CSharp/4.0.0.0__0738eb9f132ed756/Mono.CSharp.dll",
            "Mono.CSharp",
            &[]
        ));
    }

    #[test]
    fn the_program_the_user_ran_is_user_code_wherever_it_is() {
        let mcs = "/usr/lib/mono/4.5/mcs.exe".to_string();
        assert!(!is_framework(&mcs, "mcs", std::slice::from_ref(&mcs)));
        assert!(is_framework(&mcs, "mcs", &[]));
    }

    #[test]
    fn an_application_s_own_assemblies_are_user_code_by_location() {
        assert!(!is_framework("/srv/app/Acme.Orders.dll", "Acme.Orders", &[]));
        assert!(!is_framework("/srv/app/Newtonsoft.Json.dll", "Newtonsoft.Json", &[]));
        assert!(!is_framework("/home/u/shared/tools/x.dll", "x", &[]));
    }

    #[test]
    fn names_decide_only_where_the_location_cannot() {
        // Self-contained: the runtime sits in the app's directory.
        assert!(is_framework("/srv/app/System.Private.CoreLib.dll", "System.Private.CoreLib", &[]));
        assert!(is_framework("", "System.Linq", &[]));
        assert!(!is_framework("", "Acme.Dynamic", &[]));
        assert!(!is_framework("/srv/app/Systemic.dll", "Systemic", &[]));
    }

    #[test]
    fn programs_are_the_files_a_command_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("App.dll"), b"").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let command = ["dotnet", "--roll-forward", "Major", "./sub/../App.dll", "input.txt"].map(String::from);
        let found = programs(&command, dir.path());
        let app = dir.path().join("App.dll");
        assert!(found.contains(&app.to_str().unwrap().to_string()), "{found:?}");
        assert!(found.iter().all(|p| p.ends_with("App.dll")), "{found:?}");
    }
}
