use super::*;

#[test]
fn empty_file_or_no_table_is_the_defaults() {
    assert_eq!(parse("").unwrap(), KeyMap::default());
    assert_eq!(parse("[keys]\n").unwrap(), KeyMap::default());
}

#[test]
fn keys_are_set_and_others_keep_their_default() {
    let k = parse("# mine\n[keys]\nquit = \"x\"\nview = \"n\"\nhistory = \"H\"\ncgroups = \"g\"\n").unwrap();
    assert_eq!((k.quit, k.view, k.history, k.cgroups), ('x', 'n', 'H', 'g'));
    assert_eq!((k.pause, k.help, k.filter), ('p', '?', '/'));
    assert_eq!(parse("[keys]\nquit = \"c\"\n").unwrap_err(), "line 2: keys.quit: 'c' is also the key of cgroups (its default)");
}

#[test]
fn bad_files_name_the_line_and_the_field() {
    let err = |t: &str| parse(t).unwrap_err();
    let e = err("[keys]\nquit = \"q\"\nzoom = \"z\"\n");
    assert!(e.starts_with("line 3: keys.zoom: unknown action"), "{e}");
    let e = err("[keys]\n\npause = 5\n");
    assert!(e.starts_with("line 3: keys.pause: expected a one-character string"), "{e}");
    assert!(e.contains("integer"), "{e}");
    let e = err("[keys]\nview = \"vv\"\n");
    assert!(e.starts_with("line 2: keys.view: \"vv\" is not one printable character"), "{e}");
    let e = err("[keys]\nview = \" \"\n");
    assert!(e.starts_with("line 2: keys.view:"), "{e}");
    let e = err("[keys]\nview = \"q\"\n");
    assert_eq!(e, "line 2: keys.view: 'q' is also the key of quit (its default)");
    let e = err("[keys]\nquit = \"a\"\nview = \"a\"\n");
    assert!(e.starts_with("line 2: keys.quit: 'a' is also the key of view") && !e.contains("default"), "{e}");
    let e = err("[keys]\nquit = \"q\"\n\n[colors]\nfg = \"red\"\n");
    assert!(e.starts_with("line 4:") && e.contains("colors"), "{e}");
    let e = err("[keys]\nquit = \"q\n");
    assert!(e.starts_with("line 2:"), "syntax: {e}");
    let e = err("keys = 3\n");
    assert!(e.starts_with("line 1:"), "{e}");
}

#[test]
fn a_bad_or_missing_file_gives_the_defaults_and_says_why() {
    let dir = std::env::temp_dir().join(format!("chameleon-top-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("top.toml");
    std::fs::write(&path, "[keys]\nquit = 1\n").unwrap();
    let (k, notice) = load(&path, false);
    assert_eq!(k, KeyMap::default());
    let notice = notice.unwrap();
    assert!(notice.contains("line 2: keys.quit") && notice.ends_with("using the default keys"), "{notice}");
    std::fs::write(&path, "[keys]\nquit = \"x\"\n").unwrap();
    assert_eq!(load(&path, false), (KeyMap { quit: 'x', ..Default::default() }, None));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(load(&path, false), (KeyMap::default(), None), "no file: defaults, silently");
    assert!(load(&path, true).1.is_some(), "a named file that is missing is reported");
    std::fs::remove_dir(&dir).unwrap();
}
