//! Images attached to a prompt: `--image` in print mode, `/image` and a dropped file's path in
//! the REPL. Each must reach the provider as an image block of the user message.

use std::io::Cursor;
use std::path::Path;

use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{body, Home, Talk};

/// Writes a `width` × `height` PNG to `path`.
fn write_png(path: &Path, width: u32, height: u32) {
    let img = image::RgbaImage::from_fn(width, height, |x, y| image::Rgba([x as u8, y as u8, 90, 255]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    std::fs::write(path, out.into_inner()).unwrap();
}

/// The image blocks of the first user message, as (media type, base64 data), in either API's
/// shape.
fn user_images(request: &Value) -> Vec<(String, String)> {
    let content = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default();
    content
        .iter()
        .filter_map(|block| match block["type"].as_str()? {
            // Anthropic: {"type":"image","source":{"type":"base64","media_type","data"}}
            "image" => Some((
                block["source"]["media_type"].as_str()?.to_owned(),
                block["source"]["data"].as_str()?.to_owned(),
            )),
            // OpenAI: {"type":"image_url","image_url":{"url":"data:<type>;base64,<data>"}}
            "image_url" => {
                let url = block["image_url"]["url"].as_str()?.strip_prefix("data:")?;
                let (media_type, data) = url.split_once(";base64,")?;
                Some((media_type.to_owned(), data.to_owned()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_sends_every_image_given_with_image() {
    for openai in [false, true] {
        let server = MockServer::start().await;
        let mut home = Home::new();
        if openai {
            home.openai(&server);
            server.push(Reply::sse(script::openai_text("Two squares.")));
        } else {
            home.anthropic(&server);
            server.push(Reply::sse(script::anthropic_text("Two squares.")));
        }
        write_png(&home.work().join("a.png"), 4, 3);
        write_png(&home.work().join("b b.png"), 2, 2);
        let out = home
            .run(
                &["-p", "what are these?", "--image", "a.png", "--image", "b b.png"],
                None,
            )
            .await;
        assert_eq!(out.ok(), "Two squares.\n");
        let request = body(&server.requests()[0]);
        let images = user_images(&request);
        assert_eq!(images.len(), 2, "openai {openai}: {request}");
        for (media_type, data) in &images {
            assert_eq!(media_type, "image/png");
            assert!(data.len() > 20, "{data}");
        }
        // The text goes with them, and the session keeps the images for a resume.
        assert!(request.to_string().contains("what are these?"));
        let log = std::fs::read_to_string(&home.session_files()[0]).unwrap();
        assert_eq!(log.matches(r#""type":"image""#).count(), 2, "openai {openai}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_image_is_a_usage_error_that_names_the_file_and_sends_nothing() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    std::fs::write(home.work().join("notes.png"), "not an image at all").unwrap();
    let out = home.run(&["-p", "look", "--image", "notes.png"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("notes.png") && out.stderr.contains("not a PNG, JPEG, GIF or WebP image"),
        "{}",
        out.stderr
    );
    let out = home.run(&["-p", "look", "--image", "missing.png"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("cannot attach missing.png"), "{}", out.stderr);
    assert!(server.requests().is_empty());
    assert!(home.session_files().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_that_is_a_fifo_is_refused_at_once_and_named() {
    // Opening a FIFO for reading waits for a writer: `--image` must say what it is rather than
    // hang (the run would outlast the harness's minute).
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    let fifo = home.work().join("shot.png");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = home.run(&["-p", "look", "--image", "shot.png"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("cannot attach shot.png: it is a FIFO (named pipe), not a regular file"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    assert!(home.session_files().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_repl_attaches_with_image_and_when_a_file_is_dropped_on_it() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("One picture.")));
    server.push(Reply::sse(script::anthropic_text("Another picture.")));
    let mut home = Home::new();
    home.anthropic(&server);
    write_png(&home.work().join("first.png"), 3, 3);
    let dropped = home.work().join("my screenshot.png");
    write_png(&dropped, 5, 2);
    let dropped_typed = format!("'{}'", dropped.display());
    home.in_repl(&[], move |p| {
        p.type_line("/image");
        p.expect("no images attached");
        p.type_line("/image first.png");
        p.exp_string("attached first.png (PNG, 1 KB): it goes with your next prompt")
            .unwrap();
        p.type_line("describe it");
        p.expect("One picture.");
        p.expect("> ");
        // A file dropped onto the terminal arrives as its quoted path.
        p.send_line(&format!("and this one {dropped_typed} please")).unwrap();
        p.expect("with my screenshot.png (PNG");
        p.expect("Another picture.");
        p.quit();
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_images(&body(&requests[0])).len(),
        1,
        "/image goes with the next prompt"
    );
    // The second request carries the whole conversation: the first prompt's image and the
    // dropped one, in the newest user message.
    let second = body(&requests[1]);
    let last_user = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    let images = user_images(&serde_json::json!({ "messages": [last_user] }));
    assert_eq!(images.len(), 1, "the dropped file is attached once: {second}");
    assert!(second.to_string().contains("please"));
}
