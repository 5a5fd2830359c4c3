use super::*;
use clap::Parser;

#[derive(Parser)]
struct Offline {
    #[command(flatten)]
    export: ExportFlags<OfflineExport>,
}

#[derive(Parser)]
struct Remote {
    #[command(flatten)]
    export: ExportFlags<RemoteExport>,
}

#[derive(Parser)]
struct Coordinator {
    /// The coordinator's selection temperature, beside the export's.
    #[arg(long)]
    temperature: Option<f64>,
    #[command(flatten)]
    export: ExportFlags<CoordinatorExport>,
}

fn offline(args: &[&str]) -> Result<ExportChoice, clap::Error> {
    Offline::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
        .map(|o| o.export.choice().clone())
}

fn remote(args: &[&str]) -> Result<ExportChoice, clap::Error> {
    Remote::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
        .map(|o| o.export.choice().clone())
}

#[test]
fn each_front_end_has_the_same_defaults() {
    assert_eq!(offline(&[]).unwrap(), ExportChoice::default());
    assert_eq!(remote(&[]).unwrap(), ExportChoice::default());
    let c = Coordinator::try_parse_from(["x"]).unwrap();
    assert_eq!(c.export.choice().clone(), ExportChoice::default());
    assert_eq!(c.temperature, None);
}

#[test]
fn the_coordinator_spells_its_flags_with_export() {
    let c = Coordinator::try_parse_from([
        "x",
        "--temperature",
        "30",
        "--export-temperature",
        "20",
        "--export-propagation",
        "softmax",
        "--export-weights",
        "ndf",
        "--export-shrink",
        "--export-format",
        "ybb",
    ])
    .unwrap();
    assert_eq!(c.temperature, Some(30.0));
    let choice = c.export.choice();
    assert_eq!(choice.temperature, 20.0);
    assert_eq!(choice.backup, BackupChoice::Softmax);
    assert_eq!(choice.weights, Some(WeightsChoice::Ndf));
    assert!(choice.shrink);
    assert_eq!(choice.format, FormatChoice::Ybb);
    let raw = Coordinator::try_parse_from(["x", "--export-raw"]).unwrap();
    assert!(raw.export.choice().raw);
    for absent in ["--shrink", "--raw", "--format=ybb", "--backup=softmax"] {
        assert!(
            Coordinator::try_parse_from(["x", absent]).is_err(),
            "{absent}"
        );
    }
}

/// One spelling in every front end; `export` and `remote export` keep
/// their former plain ones, the coordinator its `--export-prior-games`.
#[test]
fn every_front_end_takes_the_export_spellings_and_its_former_ones() {
    let new = [
        "--export-propagation=softmax",
        "--export-temperature=20",
        "--export-weights=ndf",
        "--export-shrink",
        "--export-format=text",
        "--export-leaf-discount=3",
        "--export-by-results",
        "--prior-games=2",
    ];
    let coordinator = Coordinator::try_parse_from(std::iter::once("x").chain(new))
        .unwrap()
        .export
        .choice()
        .clone();
    for parse in [offline, remote] {
        assert_eq!(parse(&new).unwrap(), coordinator);
        let former = parse(&[
            "--backup=softmax",
            "--temperature=20",
            "--weights=ndf",
            "--shrink",
            "--format=text",
            "--leaf-discount=3",
            "--by-results",
            "--prior-games=2",
        ]);
        assert_eq!(former.unwrap(), coordinator);
    }
    let c = Coordinator::try_parse_from(["x", "--export-prior-games=2"]).unwrap();
    assert_eq!(c.export.choice().prior_games, 2.0);
}

#[test]
fn every_front_end_takes_auto_text_and_ybb() {
    for parse in [offline, remote] {
        assert_eq!(
            parse(&["--format", "auto"]).unwrap().format,
            FormatChoice::Auto
        );
        assert_eq!(
            parse(&["--format", "text"]).unwrap().format,
            FormatChoice::Text
        );
        // The former name of `text`.
        assert_eq!(
            parse(&["--format", "db2016"]).unwrap().format,
            FormatChoice::Text
        );
        assert_eq!(
            parse(&["--format", "ybb"]).unwrap().format,
            FormatChoice::Ybb
        );
        assert!(parse(&["--format", "csv"]).is_err());
    }
}

#[test]
fn the_format_follows_the_extension() {
    let cases = [
        (FormatChoice::Auto, "x.ybb", Some(BookFormat::Ybb)),
        (FormatChoice::Auto, "dir.v2/x.YBB", Some(BookFormat::Ybb)),
        (FormatChoice::Auto, "x.db", Some(BookFormat::Db2016)),
        (FormatChoice::Auto, "x.db2016", Some(BookFormat::Db2016)),
        (FormatChoice::Auto, "x", Some(BookFormat::Db2016)),
        (FormatChoice::Auto, "x.ybb.bak", Some(BookFormat::Db2016)),
        (FormatChoice::Text, "x.db", Some(BookFormat::Db2016)),
        (FormatChoice::Ybb, "x.ybb", Some(BookFormat::Ybb)),
        // An extension that names no format takes an explicit one.
        (FormatChoice::Ybb, "x.bin", Some(BookFormat::Ybb)),
        (FormatChoice::Text, "x.txt", Some(BookFormat::Db2016)),
        (FormatChoice::Text, "x.ybb", None),
        (FormatChoice::Ybb, "x.db", None),
        (FormatChoice::Ybb, "x.DB2016", None),
    ];
    for (choice, path, expected) in cases {
        assert_eq!(
            choice.resolve(Path::new(path)).ok(),
            expected,
            "{choice} {path}"
        );
    }
    let err = FormatChoice::Text
        .resolve(Path::new("out/x.ybb"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the export format `text` contradicts the path `out/x.ybb`, whose extension \
         makes it a binary .ybb book: change the path's extension or leave the format \
         to `auto`"
    );
    let err = FormatChoice::Ybb.resolve(Path::new("x.db")).unwrap_err();
    assert!(err.to_string().contains("`ybb`") && err.to_string().contains("a text book"));
}

#[test]
fn a_request_whose_format_contradicts_its_path_is_refused() {
    let request = ExportRequest {
        path: "book.ybb".into(),
        format: ExportFormat::Db2016.into(),
        ..ExportRequest::default()
    };
    assert!(matches!(
        ExportChoice::from_request(&request),
        Err(ExportChoiceError::FormatMismatch { .. })
    ));
    let auto = ExportRequest {
        format: ExportFormat::ByExtension.into(),
        ..request
    };
    assert_eq!(
        ExportChoice::from_request(&auto).unwrap().format,
        FormatChoice::Auto
    );
}

#[test]
fn raw_excludes_shrink_backup_and_weights() {
    assert!(offline(&["--raw"]).unwrap().raw);
    assert!(offline(&["--shrink"]).unwrap().shrink);
    for other in ["--shrink", "--backup=softmax", "--weights=one"] {
        assert!(offline(&["--raw", other]).is_err(), "{other}");
        assert!(remote(&["--raw", other]).is_err(), "{other}");
    }
}

#[test]
fn the_default_weights_follow_the_backup() {
    let minimax = offline(&[]).unwrap().options();
    assert_eq!(
        (minimax.backup, minimax.weights),
        (Backup::Minimax, Weights::One)
    );
    let softmax = offline(&["--backup", "softmax"]).unwrap().options();
    assert_eq!(
        (softmax.backup, softmax.weights),
        (Backup::Softmax, Weights::Policy)
    );
    let chosen = offline(&["--backup", "softmax", "--weights", "one"]).unwrap();
    assert_eq!(chosen.options().weights, Weights::One);
}

#[test]
fn a_request_goes_there_and_back() {
    let choice = remote(&[
        "--backup",
        "softmax",
        "--weights",
        "policy",
        "--temperature",
        "12.5",
        "--shrink",
        "--format",
        "text",
        "--leaf-discount",
        "6",
    ])
    .unwrap();
    assert_eq!(choice.leaf_discount, 6);
    assert_eq!(choice.options().leaf_discount, 6);
    let request = choice.to_request("book.bin".into());
    assert_eq!(request.path, "book.bin");
    assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
    assert_eq!(
        choice.format.book_format(Path::new("book.bin")),
        BookFormat::Db2016
    );
    // The same weights for a binary book: refused, the request as the flags.
    let binary = ExportChoice {
        format: FormatChoice::Ybb,
        ..choice
    };
    let refused = ExportChoice::from_request(&binary.to_request("book.bin".into()));
    assert!(
        matches!(refused, Err(ExportChoiceError::WeightsInBinary { .. })),
        "{refused:?}"
    );
    assert!(binary.format_for(Path::new("book.bin")).is_err());
    assert_eq!(
        FormatChoice::Auto.book_format(Path::new("x.YBB")),
        BookFormat::Ybb
    );
    assert_eq!(
        FormatChoice::Auto.book_format(Path::new("x.db")),
        BookFormat::Db2016
    );
}

#[test]
fn leaf_discounts_out_of_range_are_refused_by_flag_and_by_request() {
    let c = Coordinator::try_parse_from(["x", "--export-leaf-discount", "5"]).unwrap();
    assert_eq!(c.export.choice().leaf_discount, 5);
    for bad in [
        "--export-leaf-discount=201",
        "--export-leaf-discount=-1",
        "--leaf-discount=x",
    ] {
        let err = offline(&[bad]).unwrap_err().to_string();
        assert!(err.contains("--export-leaf-discount"), "{bad}: {err}");
    }
    assert!(offline(&["--leaf-discount", "5", "--raw"]).is_err());
    for bad in [201, -1, i32::MAX] {
        let request = ExportRequest {
            leaf_discount: bad,
            ..ExportRequest::default()
        };
        assert_eq!(
            ExportChoice::from_request(&request).unwrap_err(),
            ExportChoiceError::LeafDiscount(bad)
        );
    }
}

#[test]
fn values_by_results_travel_through_every_front_end() {
    let choice = offline(&["--by-results", "--prior-games", "10"]).unwrap();
    assert!(choice.by_results);
    assert_eq!(choice.options().by_results, Some(10.0));
    assert_eq!(offline(&[]).unwrap().options().by_results, None);
    let request = choice.to_request("book.db".into());
    assert!(request.by_results);
    assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
    let c =
        Coordinator::try_parse_from(["x", "--export-by-results", "--prior-games", "2"]).unwrap();
    assert_eq!(c.export.choice().options().by_results, Some(2.0));
    let r = remote(&["--by-results"]).unwrap();
    assert_eq!(r.options().by_results, Some(DEFAULT_PRIOR_GAMES));
    assert_eq!(r.opponents, OpponentSelection::All);
    // Results move values: not for a raw export.
    assert!(offline(&["--by-results", "--raw"]).is_err());
    // A negative or non-finite prior is refused, by flag and by request.
    let flags = Offline::try_parse_from(["x", "--prior-games=-1"]).unwrap();
    assert_eq!(
        flags.export.checked().unwrap_err(),
        ExportChoiceError::PriorGames(-1.0)
    );
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let request = ExportRequest {
            by_results: true,
            prior_games: bad,
            ..ExportRequest::default()
        };
        assert!(matches!(
            ExportChoice::from_request(&request),
            Err(ExportChoiceError::PriorGames(_))
        ));
    }
}

#[test]
fn a_temperature_of_0_is_minimax_in_every_front_end() {
    // A request without a temperature gets the default; 0 given, by any front
    // end's flag or in a request, stays 0: minimax.
    let absent = ExportRequest::default();
    assert_eq!(
        ExportChoice::from_request(&absent).unwrap().temperature,
        DEFAULT_TEMPERATURE
    );
    let zero = ["--export-temperature", "0"];
    for choice in [
        offline(&zero).unwrap(),
        remote(&zero).unwrap(),
        Coordinator::try_parse_from(std::iter::once("x").chain(zero))
            .unwrap()
            .export
            .checked()
            .unwrap(),
    ] {
        assert_eq!(choice.temperature, 0.0);
        let request = choice.to_request("book.db".into());
        assert_eq!(request.temperature, Some(0.0));
        assert_eq!(
            ExportChoice::from_request(&request).unwrap().temperature,
            0.0
        );
    }
    let flags = Offline::try_parse_from(["x", "--temperature", "0"]).unwrap();
    assert_eq!(flags.export.checked().unwrap().temperature, 0.0);
    let negative = ExportRequest {
        temperature: Some(-1.0),
        ..ExportRequest::default()
    };
    assert_eq!(
        ExportChoice::from_request(&negative)
            .unwrap_err()
            .to_string(),
        "the export temperature must be a finite number >= 0, not -1"
    );
    // The former spelling parses; the error names the flag's one name.
    let flags = Offline::try_parse_from(["x", "--temperature=-1"]).unwrap();
    assert_eq!(
        flags.export.checked().unwrap_err().to_string(),
        "--export-temperature must be a finite number >= 0, not -1"
    );
}

#[test]
fn unknown_request_values_are_named() {
    for (request, text) in [
        (
            ExportRequest {
                weights: 9,
                ..ExportRequest::default()
            },
            "unknown export weights 9",
        ),
        (
            ExportRequest {
                backup: 7,
                ..ExportRequest::default()
            },
            "unknown export backup 7",
        ),
        (
            ExportRequest {
                format: 5,
                ..ExportRequest::default()
            },
            "unknown export format 5",
        ),
    ] {
        let err = ExportChoice::from_request(&request).unwrap_err();
        assert_eq!(err.to_string(), text);
    }
}

#[test]
fn the_opponents_whose_games_count_travel_through_every_front_end() {
    let listed = OpponentSelection::Listed(vec!["2".into(), "engine at 500 nodes".into()]);
    let args = ["--opponents", "2, engine at 500 nodes"];
    assert_eq!(offline(&args).unwrap().opponents, listed);
    assert_eq!(remote(&args).unwrap().opponents, listed);
    let c = Coordinator::try_parse_from(std::iter::once("x").chain(args)).unwrap();
    assert_eq!(c.export.choice().opponents, listed);
    // Through a request and back; an older client's empty field is the pool.
    let choice = offline(&["--export-by-results", "--opponents", "1"]).unwrap();
    let request = choice.to_request("book.db".into());
    assert_eq!(request.opponents, "1");
    assert_eq!(ExportChoice::from_request(&request).unwrap(), choice);
    let pooled = ExportChoice::from_request(&ExportRequest::default()).unwrap();
    assert_eq!(pooled.opponents, OpponentSelection::All);
    assert_eq!(
        offline(&[]).unwrap().to_request(String::new()).opponents,
        "all"
    );
    // An empty item is refused, by flag and by request, naming what was given.
    let err = offline(&["--opponents", "1,,2"]).unwrap_err().to_string();
    assert!(err.contains("1,,2"), "{err}");
    let bad = ExportRequest {
        opponents: "1,".into(),
        ..ExportRequest::default()
    };
    assert!(matches!(
        ExportChoice::from_request(&bad),
        Err(ExportChoiceError::Opponents(_))
    ));
}
