"""Tiny random-weight GLiNER2 and GLiClass models in a hub cache (no network), for the gliner2 and
gliclass engines' tests.

Both sit on a tiny BERT encoder (hidden 64, 2 layers) with kit's locally built WordPiece
tokenizer; every parameter is then overwritten from one seeded generator, and the local paths
the libraries write into their configs are replaced by fixed names, so the same library version
always gives the same bytes and revision. Each builder runs in the venv of its library
(`gliner2` needs transformers<5, `gliclass` transformers>=5; see scripts/backends/gl-venv.sh).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from kit.demo.model import _fill_seeded, _install, _wordpiece_tokenizer

ENCODER_NAME = "kit-demo/tiny-bert-encoder"
GLICLASS_TOKENS = ("<<LABEL>>", "<<SEP>>", "<<EXAMPLE>>")


def build_tiny_gliner2(hub_cache: Path, repo_id: str = "kit-demo/tiny-gliner2") -> tuple[str, str]:
    """Build (once) a tiny random GLiNER2 extractor; returns (repo_id, revision)."""
    return repo_id, _install(Path(hub_cache), repo_id, {"model_type": "extractor"}, _write_gliner2)


def build_tiny_gliclass(hub_cache: Path, repo_id: str = "kit-demo/tiny-gliclass") -> tuple[str, str]:
    """Build (once) a tiny random uni-encoder GLiClass model; returns (repo_id, revision)."""
    return repo_id, _install(Path(hub_cache), repo_id, {"model_type": "GLiClass"}, _write_gliclass)


def _encoder(folder: Path) -> None:
    """A tiny BERT encoder and its tokenizer in `folder` (weights are replaced later)."""
    from transformers import BertConfig, BertModel

    tokenizer = _wordpiece_tokenizer()
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _write_gliner2(out: Path) -> None:
    from gliner2 import ExtractorConfig, GLiNER2

    with tempfile.TemporaryDirectory() as tmp:
        _encoder(Path(tmp))
        model = GLiNER2(ExtractorConfig(model_name=tmp)).eval()
    _fill_seeded(model)
    model.config.model_name = ENCODER_NAME
    model.save_pretrained(str(out))
    _scrub(out)


def _write_gliclass(out: Path) -> None:
    from gliclass import GLiClassModel
    from gliclass.config import GLiClassModelConfig
    from transformers import AutoConfig, AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        _encoder(Path(tmp))
        tokenizer = AutoTokenizer.from_pretrained(tmp)
        tokenizer.add_tokens(list(GLICLASS_TOKENS), special_tokens=True)
        label, sep, example = (tokenizer.convert_tokens_to_ids(t) for t in GLICLASS_TOKENS)
        config = GLiClassModelConfig(
            encoder_config=AutoConfig.from_pretrained(tmp).to_dict(), encoder_model=tmp,
            class_token_index=label, text_token_index=sep, example_token_index=example,
            architecture_type="uni-encoder", scorer_mlp_hidden_size=64, scorer_num_heads=4,
        )
        model = GLiClassModel(config).eval()
    model.resize_token_embeddings(len(tokenizer))
    _fill_seeded(model)
    model.config.encoder_model = model.config.encoder_model_name = ENCODER_NAME
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _scrub(out)


def _scrub(out: Path) -> None:
    """Drop the writer's version and temporary paths from every JSON file (they would change the revision)."""
    for path in sorted(out.rglob("*.json")):
        if path.name == "tokenizer.json":
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("transformers_version", None)
        for inner in (data, data.get("encoder_config")):
            if isinstance(inner, dict):
                inner.pop("transformers_version", None)
                inner.pop("_name_or_path", None)  # the temporary encoder folder
        if path.name == "tokenizer_config.json":
            data["tokenizer_class"] = "PreTrainedTokenizerFast"
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
