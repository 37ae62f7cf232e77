//! The serialized HdrHistograms in `report.json`: HdrHistogram V2 compressed encoding (the V2
//! payload, deflated, as in HdrHistogram's interval logs and Java's `encodeIntoCompressedByteBuffer`),
//! base64 with the standard alphabet and padding. Any percentile can be recomputed from them with
//! any HdrHistogram implementation. [`decode`] also accepts the uncompressed V2 encoding.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::error::InputError;

/// The `histograms` key of the scheduling attempt duration, in microseconds.
pub const ATTEMPT_LATENCY_MICROS: &str = "attemptLatencyMicros";
/// The `histograms` key of the created-to-bound latency of measured pods, in microseconds.
pub const E2E_LATENCY_MICROS: &str = "e2eLatencyMicros";
/// The `histograms` key of the created-to-running latency of measured pods, in milliseconds.
pub const POD_STARTUP_MILLIS: &str = "podStartupMillis";

/// Serializes a histogram as compressed HdrHistogram V2 and encodes it as base64.
pub fn encode(histogram: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .expect("V2 serialization into a Vec cannot fail for a valid histogram");
    STANDARD.encode(bytes)
}

/// Decodes a base64 HdrHistogram V2 (compressed or not); `what` names the field for the error
/// (`runs[0].histograms.x`).
pub fn decode(encoded: &str, what: &str) -> Result<Histogram<u64>, InputError> {
    let bytes = STANDARD
        .decode(encoded.trim())
        .map_err(|e| InputError::new("report.json", what, format!("expected base64 text: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| InputError::new("report.json", what, format!("expected an HdrHistogram V2: {e:?}")))
}

/// The cumulative distribution of a histogram as (value, fraction of samples ≤ value) points, one
/// per distinct recorded bucket, in increasing value order. Empty for an empty histogram.
pub fn cdf(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = histogram.len();
    if total == 0 {
        return Vec::new();
    }
    let mut seen = 0u64;
    let mut out = Vec::new();
    for v in histogram.iter_recorded() {
        seen += v.count_at_value();
        out.push((histogram.highest_equivalent(v.value_iterated_to()) as f64, seen as f64 / total as f64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_keeps_percentiles() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 7).unwrap();
        }
        let back = decode(&encode(&h), "histograms.x").unwrap();
        assert_eq!(back.len(), 1000);
        for q in [0.5, 0.9, 0.99] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q), "q={q}");
        }
    }

    #[test]
    fn decode_accepts_uncompressed_v2_too() {
        use hdrhistogram::serialization::V2Serializer;
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(250, 9).unwrap();
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        let back = decode(&STANDARD.encode(bytes), "h").unwrap();
        assert_eq!((back.len(), back.max()), (9, h.max()));
        // The compressed encoding starts with the V2 compressed cookie 0x1c849314.
        assert_eq!(&STANDARD.decode(encode(&h)).unwrap()[..4], &[0x1c, 0x84, 0x93, 0x14]);
    }

    #[test]
    fn decode_errors_name_the_field() {
        let check = |input: &str, expected: &str| {
            let e = decode(input, "runs[1].histograms.attemptLatencyMicros").unwrap_err();
            assert_eq!(e.path, "runs[1].histograms.attemptLatencyMicros");
            assert!(e.message.contains(expected), "{input:?}: {}", e.message);
        };
        check("not base64!", "expected base64");
        check("AAAA", "expected an HdrHistogram V2");
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [10u64, 10, 20, 40] {
            h.record(v).unwrap();
        }
        let points = cdf(&h);
        assert_eq!(points, vec![(10.0, 0.5), (20.0, 0.75), (40.0, 1.0)]);
        assert!(cdf(&Histogram::<u64>::new(3).unwrap()).is_empty());
    }
}
