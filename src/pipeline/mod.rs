//! Pipelines: ordered stages declared in `pipelines/*.toml`, type-checked when the service
//! starts (a wrong order is a start-up error, never a request-time one) and run per request.
//! CPU stages run on the blocking pool; only inference waits on the model's queue.

mod spec;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use spec::{Kind, PipelineSpec, StageSpec};

use crate::deid::{RecognizerError, Recognizers};
use crate::inference::LoadedModel;
pub use crate::stages::recognize::Terms;
use crate::stages::{
    RunOptions, Spans, StageError, TextView, aggregate, infer, merge, recognize, tokens, window,
};

/// Why a pipeline definition was refused.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("pipeline `{0}` is required but not defined")]
    Missing(String),
    #[error(transparent)]
    Recognizers(#[from] RecognizerError),
}

/// A checked pipeline.
#[derive(Debug)]
pub struct Pipeline {
    pub name: String,
    stages: Vec<StageSpec>,
    /// The first Spans → Spans stage: stages before it run per text segment, the rest per region.
    post_at: usize,
    recognizers: Arc<Recognizers>,
}

enum Payload {
    Text(TextView),
    Tokens(tokens::Tokens),
    Windows(tokens::Tokens, Vec<std::ops::Range<usize>>),
    Scores(infer::TokenScores),
    Spans(Spans),
}

impl Pipeline {
    /// Checks that stage kinds chain from text to spans with exactly one inference stage.
    pub fn check(
        spec: PipelineSpec,
        file: &str,
        recognizers: Arc<Recognizers>,
    ) -> Result<Self, PipelineError> {
        let invalid = |message: String| PipelineError::Invalid {
            file: file.to_string(),
            message,
        };
        let mut kind = Kind::Text;
        for (i, stage) in spec.stages.iter().enumerate() {
            let (input, output) = stage.kinds();
            if input != kind {
                return Err(invalid(format!(
                    "stage {} (`{}`) takes {input:?} but receives {kind:?}",
                    i + 1,
                    stage.name()
                )));
            }
            kind = output;
        }
        if kind != Kind::Spans {
            return Err(invalid(format!(
                "the last stage yields {kind:?}, not Spans"
            )));
        }
        let infers = spec
            .stages
            .iter()
            .filter(|s| matches!(s, StageSpec::Infer))
            .count();
        if infers != 1 {
            return Err(invalid(format!(
                "a pipeline needs exactly one infer stage, found {infers}"
            )));
        }
        let post_at = spec
            .stages
            .iter()
            .position(|s| s.kinds().0 == Kind::Spans)
            .unwrap_or(spec.stages.len());
        Ok(Self {
            name: spec.name,
            stages: spec.stages,
            post_at,
            recognizers,
        })
    }

    /// The window capacity in content tokens for a model.
    fn window_params(
        &self,
        model: &LoadedModel,
        max_tokens: usize,
        overlap: usize,
        prefer: bool,
    ) -> window::WindowParams {
        let limit = model.info.max_positions.min(max_tokens);
        window::WindowParams {
            capacity: limit.saturating_sub(model.tokenizer.special_count()).max(1),
            overlap,
            prefer_sentences: prefer,
        }
    }

    /// Runs the whole pipeline on one text (what `/analyze` does).
    pub async fn run(
        self: &Arc<Self>,
        model: Arc<LoadedModel>,
        text: Arc<str>,
        opts: Arc<RunOptions>,
    ) -> Result<Spans, StageError> {
        let spans = self.run_model(model.clone(), text, opts.clone()).await?;
        let this = self.clone();
        crate::parallel::on_cpu(move || this.run_post(spans, &model, &opts, &Terms::default()))
            .await
            .map_err(|e| StageError::Internal(format!("stage task failed: {e}")))?
    }

    /// Runs the stages that need the model (from the text to the first spans) on one text: the
    /// part the streaming engine runs once per segment.
    pub async fn run_model(
        self: &Arc<Self>,
        model: Arc<LoadedModel>,
        text: Arc<str>,
        opts: Arc<RunOptions>,
    ) -> Result<Spans, StageError> {
        let mut payload = Payload::Text(TextView::new(text));
        let mut i = 0;
        while i < self.post_at {
            if matches!(self.stages[i], StageSpec::Infer) {
                let Payload::Windows(toks, ws) = payload else {
                    return Err(StageError::Internal("infer received the wrong item".into()));
                };
                payload = Payload::Scores(infer::infer(&model, toks, ws).await?);
                i += 1;
                continue;
            }
            let end = (i..self.post_at)
                .find(|&j| matches!(self.stages[j], StageSpec::Infer))
                .unwrap_or(self.post_at);
            let (this, model, opts) = (self.clone(), model.clone(), opts.clone());
            payload = crate::parallel::on_cpu(move || {
                let none = Terms::default();
                (i..end).try_fold(payload, |p, k| this.run_cpu(k, &model, &opts, &none, p))
            })
            .await
            .map_err(|e| StageError::Internal(format!("stage task failed: {e}")))??;
            i = end;
        }
        match payload {
            Payload::Spans(spans) => Ok(spans),
            _ => Err(StageError::Internal("pipeline did not yield spans".into())),
        }
    }

    /// Runs the Spans → Spans stages (merging, recognizers) on the spans of a text or of a
    /// streaming region; `known` are identifiers found earlier in the same stream, which
    /// propagation also looks for. CPU only: call it off the async runtime.
    pub fn run_post(
        &self,
        spans: Spans,
        model: &LoadedModel,
        opts: &RunOptions,
        known: &Terms,
    ) -> Result<Spans, StageError> {
        let payload = (self.post_at..self.stages.len())
            .try_fold(Payload::Spans(spans), |p, k| {
                self.run_cpu(k, model, opts, known, p)
            })?;
        match payload {
            Payload::Spans(spans) => Ok(spans),
            _ => Err(StageError::Internal("pipeline did not yield spans".into())),
        }
    }

    /// Runs the stages before inference on the calling thread: the exact windows a request
    /// would send to the model (benchmarks compare them against a plain ONNX Runtime loop).
    pub fn plan(
        &self,
        model: &LoadedModel,
        text: Arc<str>,
        opts: &RunOptions,
    ) -> Result<(tokens::Tokens, Vec<std::ops::Range<usize>>), StageError> {
        let infer_at = self
            .stages
            .iter()
            .position(|s| matches!(s, StageSpec::Infer))
            .unwrap_or(self.stages.len());
        let payload = (0..infer_at).try_fold(Payload::Text(TextView::new(text)), |p, k| {
            self.run_cpu(k, model, opts, &Terms::default(), p)
        })?;
        match payload {
            Payload::Windows(toks, ws) => Ok((toks, ws)),
            _ => Err(StageError::Internal(
                "pipeline yields no windows before inference".into(),
            )),
        }
    }

    fn run_cpu(
        &self,
        k: usize,
        model: &LoadedModel,
        opts: &RunOptions,
        known: &Terms,
        payload: Payload,
    ) -> Result<Payload, StageError> {
        let wrong = || {
            StageError::Internal(format!(
                "stage {} received the wrong item",
                self.stages[k].name()
            ))
        };
        Ok(match (&self.stages[k], payload) {
            (StageSpec::Normalize { accents, clean }, Payload::Text(view)) => {
                let accents = accents.unwrap_or(opts.normalize_accents);
                let clean = clean.unwrap_or(opts.sentence_clean);
                Payload::Text(TextView::normalize(view.original.clone(), accents, clean))
            }
            (StageSpec::Tokenize { sentences }, Payload::Text(view)) => {
                let detect = sentences.unwrap_or(opts.sentence_detection);
                let lang = detect.then_some(opts.sentence_language.as_str());
                Payload::Tokens(tokens::tokenize(&model.tokenizer, view, lang)?)
            }
            (
                StageSpec::Window {
                    max_tokens,
                    overlap_tokens,
                    prefer_sentences,
                },
                Payload::Tokens(toks),
            ) => {
                let prefer = prefer_sentences.unwrap_or(opts.sentence_detection);
                let p = self.window_params(model, *max_tokens, *overlap_tokens, prefer);
                let ws = window::windows(toks.len(), &toks.words, &toks.sentence_starts, p);
                Payload::Windows(toks, ws)
            }
            (StageSpec::Aggregate { strategy }, Payload::Scores(scores)) => {
                let strategy = strategy.unwrap_or(opts.aggregation);
                let raw = aggregate::aggregate(&scores, &model.info.labels, strategy);
                let view = &scores.tokens.text;
                let spans = raw
                    .into_iter()
                    .map(|mut s| {
                        (s.start, s.end) = view.to_original(s.start, s.end);
                        s
                    })
                    .collect();
                let sentence_starts = scores
                    .tokens
                    .sentence_bytes
                    .iter()
                    .map(|&b| view.to_original(b, b + 1).0)
                    .collect();
                Payload::Spans(Spans {
                    original: view.original.clone(),
                    spans,
                    sentence_starts,
                    stats: crate::stages::RunStats {
                        tokens: scores.tokens.len(),
                        windows: scores.windows,
                        sentences: scores.tokens.sentence_bytes.len() + 1,
                        ..Default::default()
                    },
                })
            }
            (
                StageSpec::Merge {
                    join_pieces,
                    snap_to_words,
                    group_entities,
                    smart_merging,
                },
                Payload::Spans(spans),
            ) => Payload::Spans(merge::merge(
                spans,
                merge::MergeParams {
                    join_pieces: *join_pieces,
                    snap_to_words: *snap_to_words,
                    group_entities: group_entities.unwrap_or(opts.group_entities),
                    smart_merging: smart_merging.unwrap_or(opts.smart_merging),
                    threshold: opts.confidence_threshold,
                },
            )),
            (
                StageSpec::Recognize {
                    smart_merging,
                    safety_sweep,
                    join_names,
                    propagate,
                    whole_places,
                    speakers,
                    findings_obey_threshold,
                },
                Payload::Spans(spans),
            ) => Payload::Spans(recognize::recognize(
                spans,
                &self.recognizers,
                known,
                recognize::RecognizeParams {
                    smart_merging: smart_merging.unwrap_or(opts.smart_merging),
                    safety_sweep: safety_sweep.unwrap_or(opts.safety_sweep),
                    join_names: *join_names,
                    propagate: *propagate,
                    whole_places: *whole_places,
                    speakers: *speakers,
                    min_finding_score: if *findings_obey_threshold {
                        opts.confidence_threshold
                    } else {
                        0.0
                    },
                },
            )),
            _ => return Err(wrong()),
        })
    }
}

/// The pipelines the service serves, by name.
#[derive(Debug)]
pub struct Pipelines {
    by_name: BTreeMap<String, Arc<Pipeline>>,
    pub recognizers: Arc<Recognizers>,
}

impl Pipelines {
    /// Loads and checks every `*.toml` in `dir` and the recognizer table in `dir/recognizers`,
    /// then requires the named pipelines.
    pub fn load(dir: &Path, required: &[&str]) -> Result<Self, PipelineError> {
        let recognizers = Arc::new(Recognizers::load(&dir.join("recognizers"))?);
        let mut by_name = BTreeMap::new();
        let sources = crate::datafiles::read_toml_dir(dir, "pipelines").map_err(|e| {
            PipelineError::Invalid {
                file: e.file,
                message: e.message,
            }
        })?;
        for (file, raw) in sources {
            let spec: PipelineSpec = toml::from_str(&raw).map_err(|e| PipelineError::Invalid {
                file: file.clone(),
                message: e.to_string(),
            })?;
            let pipeline = Pipeline::check(spec, &file, recognizers.clone())?;
            by_name.insert(pipeline.name.clone(), Arc::new(pipeline));
        }
        for name in required {
            if !by_name.contains_key(*name) {
                return Err(PipelineError::Missing(name.to_string()));
            }
        }
        Ok(Self {
            by_name,
            recognizers,
        })
    }

    pub fn get(&self, name: &str) -> Option<Arc<Pipeline>> {
        self.by_name.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str) -> Result<Pipeline, PipelineError> {
        Pipeline::check(
            toml::from_str(src).map_err(|e| PipelineError::Invalid {
                file: "t".into(),
                message: e.to_string(),
            })?,
            "t",
            Arc::new(Recognizers::builtin().map_err(PipelineError::from)?),
        )
    }

    #[test]
    fn shipped_pipelines_check() {
        let p = Pipelines::load(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/pipelines")),
            &["analyze", "pii_extract", "pii_deidentify"],
        );
        assert!(p.is_ok(), "{p:?}");
    }

    #[test]
    fn wrong_order_is_refused() {
        let src = r#"
            name = "bad"
            [[stages]]
            stage = "tokenize"
            [[stages]]
            stage = "infer"
            [[stages]]
            stage = "aggregate"
        "#;
        let err = check(src).unwrap_err().to_string();
        assert!(err.contains("takes Windows but receives Tokens"), "{err}");
    }

    #[test]
    fn unknown_stage_and_params_are_refused() {
        assert!(check("name = \"x\"\n[[stages]]\nstage = \"teleport\"\n").is_err());
        assert!(check("name = \"x\"\n[[stages]]\nstage = \"window\"\nmax_tokens = 8\noverlap_tokens = 1\nwat = 1\n").is_err());
    }

    #[test]
    fn must_end_in_spans() {
        let src = "name = \"x\"\n[[stages]]\nstage = \"tokenize\"\n";
        assert!(check(src).unwrap_err().to_string().contains("not Spans"));
    }
}
