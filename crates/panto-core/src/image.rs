//! Tool-returned images: detect the type from the bytes, and resize so the longer side is at most
//! the configured maximum. Providers reject or down-sample large images anyway; resizing here
//! keeps requests and session logs small.

use std::io::Cursor;

use base64::Engine;
use image::{ImageFormat, ImageReader};

/// A processed image: media type and base64 of the bytes to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Processed {
    pub media_type: &'static str,
    pub data: String,
}

/// The media type of `bytes`, from their magic number.
pub(crate) fn detect_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Detects, resizes if needed, and base64-encodes an image. Errors say why the bytes are not a
/// usable image.
pub(crate) fn process(bytes: &[u8], max_dimension: u32) -> Result<Processed, String> {
    let media_type = detect_media_type(bytes).ok_or_else(|| {
        format!(
            "unsupported image data ({} bytes): expected PNG, JPEG, GIF or WebP",
            bytes.len()
        )
    })?;
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read image: {e}"))?;
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| format!("cannot read {media_type} header: {e}"))?;
    let engine = base64::engine::general_purpose::STANDARD;
    if width.max(height) <= max_dimension.max(1) {
        return Ok(Processed {
            media_type,
            data: engine.encode(bytes),
        });
    }
    let decoded = image::load_from_memory(bytes).map_err(|e| format!("cannot decode {media_type}: {e}"))?;
    // `resize` keeps the aspect ratio and fits inside the box.
    let resized = decoded.resize(max_dimension, max_dimension, image::imageops::FilterType::Triangle);
    let (format, out_type) = if media_type == "image/jpeg" {
        (ImageFormat::Jpeg, "image/jpeg")
    } else {
        // GIF and WebP re-encode as PNG: the image crate writes lossless PNG everywhere, and every
        // provider accepts it.
        (ImageFormat::Png, "image/png")
    };
    let mut out = Cursor::new(Vec::new());
    let result = if format == ImageFormat::Jpeg {
        // JPEG has no alpha channel.
        image::DynamicImage::ImageRgb8(resized.to_rgb8()).write_to(&mut out, format)
    } else {
        resized.write_to(&mut out, format)
    };
    result.map_err(|e| format!("cannot encode resized image: {e}"))?;
    Ok(Processed {
        media_type: out_type,
        data: engine.encode(out.into_inner()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = image::RgbaImage::from_fn(width, height, |x, y| {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 7, 255])
        });
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn dims(b64: &str) -> (u32, u32) {
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        image::load_from_memory(&bytes)
            .map(|i| (i.width(), i.height()))
            .unwrap()
    }

    #[test]
    fn large_images_shrink_to_the_maximum_keeping_aspect() {
        let p = process(&png(400, 100), 200).unwrap();
        assert_eq!(p.media_type, "image/png");
        assert_eq!(dims(&p.data), (200, 50));
    }

    #[test]
    fn small_images_pass_through_unchanged() {
        let bytes = png(20, 10);
        let p = process(&bytes, 200).unwrap();
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(p.data).unwrap(), bytes);
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let e = process(b"hello", 100).unwrap_err();
        assert!(e.contains("unsupported image data (5 bytes)"), "{e}");
    }
}
