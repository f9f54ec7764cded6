//! Times the encoder on a JSON list of texts, batched as kgfuse batches them (32 per
//! call, in order of length), and writes the vectors for a comparison:
//!
//! ```sh
//! cargo run --release -p kgfuse-encoder --example embed_file -- TEXTS.json [VECTORS.f32] [RUNS]
//! ```
//!
//! `VECTORS.f32` gets each text's vector as 384 little-endian `f32`, in the order
//! of the file (`bench/peer/embed_only.py --vectors` compares them with numpy's).
#![allow(clippy::print_stdout)]

use kgfuse_encoder::Encoder;
use std::io::Write;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let texts_file = args
        .next()
        .ok_or("usage: embed_file TEXTS.json [VECTORS.f32] [RUNS]")?;
    let vectors_file = args.next();
    let runs: usize = args.next().map_or(Ok(3), |r| r.parse())?;
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&texts_file)?)?;
    let dir = std::env::var_os("KGFUSE_MINILM_DIR").map_or_else(
        || {
            let home = std::env::var_os("HOME").unwrap_or_default();
            std::path::PathBuf::from(home).join(".cache/kgfuse/models/all-MiniLM-L6-v2")
        },
        std::path::PathBuf::from,
    );
    let encoder = Encoder::load(&dir, 256)?;
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let batch_size: usize = std::env::var("BATCH").map_or(Ok(32), |b| b.parse())?;
    let mut vectors = vec![Vec::new(); texts.len()];
    for run in 1..=runs {
        let start = Instant::now();
        for batch in order.chunks(batch_size) {
            let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            for (&i, v) in batch.iter().zip(encoder.embed(&batch_texts)?) {
                vectors[i] = v;
            }
        }
        let took = start.elapsed().as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let rate = texts.len() as f64 / took;
        println!(
            "encoder run {run}: {} texts in {took:.2} s, {rate:.1} rows/s",
            texts.len()
        );
    }
    if let Some(path) = vectors_file {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for v in &vectors {
            for x in v {
                out.write_all(&x.to_le_bytes())?;
            }
        }
    }
    Ok(())
}
