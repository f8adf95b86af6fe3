//! `multipart/form-data` (RFC 7578) for the admin forms that upload a file (a logo):
//! the whole body is in memory already (the route's payload limit bounds it), so the
//! parts are found by their boundary and returned as byte slices.

/// One part: its field name, the file name when it is a file, and its bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    pub filename: Option<String>,
    pub data: &'a [u8],
}

/// The parts of `body`, sent with `content_type`; `None` when it is not a readable
/// `multipart/form-data` body.
pub fn parse<'a>(content_type: &str, body: &'a [u8]) -> Option<Vec<Part<'a>>> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
    })?;
    // RFC 2046 §5.1.1: 1 to 70 characters.
    if boundary.is_empty() || boundary.len() > 70 {
        return None;
    }
    let delimiter = format!("--{boundary}").into_bytes();
    let mut rest = &body[find(body, &delimiter)? + delimiter.len()..];
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let head_end = find(rest, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&rest[..head_end]).ok()?;
        let content = &rest[head_end + 4..];
        let close = [b"\r\n".as_slice(), &delimiter].concat();
        let end = find(content, &close)?;
        let (name, filename) = disposition(head)?;
        parts.push(Part {
            name,
            filename,
            data: &content[..end],
        });
        rest = &content[end + close.len()..];
        if parts.len() > 32 {
            return None;
        }
    }
}

/// The `name` and `filename` of a part's `Content-Disposition: form-data` header.
fn disposition(head: &str) -> Option<(String, Option<String>)> {
    let line = head.split("\r\n").find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("content-disposition").then_some(v)
    })?;
    let mut items = line.split(';');
    if !items.next()?.trim().eq_ignore_ascii_case("form-data") {
        return None;
    }
    let (mut name, mut filename) = (None, None);
    for item in items {
        let Some((k, v)) = item.split_once('=') else { continue };
        let v = v.trim().trim_matches('"').to_string();
        match k.trim().to_ascii_lowercase().as_str() {
            "name" => name = Some(v),
            "filename" => filename = Some(v),
            _ => {}
        }
    }
    Some((name?, filename))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The text of the field `name` (empty when absent or not UTF-8).
pub fn text<'a>(parts: &'a [Part<'_>], name: &str) -> &'a str {
    parts
        .iter()
        .find(|p| p.name == name)
        .and_then(|p| std::str::from_utf8(p.data).ok())
        .unwrap_or("")
}

/// The bytes of the file field `name`, when a file was chosen.
pub fn file<'a>(parts: &[Part<'a>], name: &str) -> Option<&'a [u8]> {
    parts
        .iter()
        .find(|p| p.name == name && p.filename.as_deref().is_some_and(|f| !f.is_empty()))
        .map(|p| p.data)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=----x1";

    #[test]
    fn fields_and_files_come_out_byte_for_byte() {
        let body = b"------x1\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n\
------x1\r\nContent-Disposition: form-data; name=\"logo\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n\x00\xff\r\n\
------x1\r\nContent-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n\r\n\r\n------x1--\r\n";
        let parts = parse(CT, body).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(text(&parts, "csrf"), "abc");
        assert_eq!(file(&parts, "logo"), Some(&b"\x89PNG\r\n\x1a\n\x00\xff"[..]));
        assert_eq!(file(&parts, "empty"), None, "no file chosen");
        assert_eq!(text(&parts, "missing"), "");
    }

    #[test]
    fn other_bodies_are_refused() {
        assert!(parse("application/x-www-form-urlencoded", b"a=b").is_none());
        assert!(parse(CT, b"no boundary here").is_none());
        assert!(parse(
            CT,
            b"------x1\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nunterminated"
        )
        .is_none());
        assert!(parse("multipart/form-data; boundary=", b"").is_none());
        let no_name = b"------x1\r\nContent-Disposition: form-data\r\n\r\nx\r\n------x1--";
        assert!(parse(CT, no_name).is_none());
    }
}
