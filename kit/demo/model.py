"""Tiny models built locally into a Hugging Face hub cache (no network): random weights from one seed,
or, with `trained=True` (what `kit demo` uses), then fitted to the demo task by kit.demo.train.

Each model is written as `hub_cache/models--org--name/snapshots/<revision>/` plus
`refs/main`, the layout `huggingface_hub.snapshot_download(local_files_only=True)` reads,
so the worker resolves a demo model by the same code path as a real one. The revision is
a content hash of the saved folder: the same bytes always get the same revision.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.errors import library_disk_error
from kit.files import umask, write_text_atomic

SEED = 0
# RoPE has no position weights, so the Llama's context costs nothing; 2048 fits the demo's
# generate prompt (474-544 tokens with this 384-token vocabulary) with room to spare.
LLAMA_CONTEXT = 2048
CLASSIFIER_CONTEXT = 512
WEIGHT_STD = 0.02

# The chat template renders the bos token itself, so a rendered prompt is tokenized
# without special tokens (as transformers' and vLLM's chat paths both do).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

# Land-use vocabulary in English, French and German, plus the answer words, so the demo
# prompts split into sensible pieces rather than single bytes.
CORPUS = (
    "Answer yes or no. Yes. No. yes no yes no",
    "Réponds par oui ou non. Oui. Non. oui non",
    "Antworte mit ja oder nein. Ja. Nein. ja nein",
    "Does this sentence describe the land use or land cover of the place?",
    "Cette phrase décrit-elle l'occupation du sol ou l'usage des terres du lieu ?",
    "Beschreibt dieser Satz die Landnutzung oder die Landbedeckung des Ortes?",
    "A dense forest of oak and pine covers the hills above the village.",
    "Une forêt dense de chênes et de pins couvre les collines au-dessus du village.",
    "Ein dichter Wald aus Eichen und Kiefern bedeckt die Hügel über dem Dorf.",
    "Farmland with wheat fields, vineyards and orchards surrounds the town.",
    "Des terres agricoles avec des champs de blé, des vignes et des vergers entourent la ville.",
    "Ackerland mit Weizenfeldern, Weinbergen und Obstgärten umgibt die Stadt.",
    "The river flows past a wetland, a lake and a small harbour.",
    "La rivière longe une zone humide, un lac et un petit port.",
    "Der Fluss fließt an einem Feuchtgebiet, einem See und einem kleinen Hafen vorbei.",
    "Residential buildings, roads, a railway station and an industrial zone.",
    "Des bâtiments résidentiels, des routes, une gare et une zone industrielle.",
    "Wohngebäude, Straßen, ein Bahnhof und ein Industriegebiet.",
    "Grassland and pasture for cattle, a quarry and a mine in the mountains.",
    "Des prairies et des pâturages pour le bétail, une carrière et une mine en montagne.",
    "Grünland und Weiden für Rinder, ein Steinbruch und ein Bergwerk in den Bergen.",
    "The mayor was elected in 1998 and the festival attracts many visitors.",
    "Le maire a été élu en 1998 et le festival attire de nombreux visiteurs.",
    "Der Bürgermeister wurde 1998 gewählt und das Fest zieht viele Besucher an.",
    "Private tennis lessons offered. One of a number of sites in the area.",
    "Cours de tennis particuliers proposés. L'un des nombreux sites de la région.",
    "Privater Tennisunterricht wird angeboten. Einer von vielen Orten in der Gegend.",
    "Judge whether the document carries land use information. Query: Document:",
    "sentence label relevant not relevant urban rural soil water terrain settlement",
    "You will read a sentence about a place and decide whether it tells something about the ground.",
    "Could this help to map the land use or land cover of that place from satellite or aerial imagery?",
    "Answer yes when the sentence describes what covers or occupies the ground, directly or through a proxy.",
    "Crops, orchards, pasture, forest, wetland, water bodies, bare rock or sand would show up in imagery.",
    "Buildings, settlements, industry, mines, roads, railways, harbours, airports and other infrastructure.",
    "Answer no when the sentence is only about history, politics, administration, people or events.",
    "Culture, prices, opening hours or services: nothing that would be visible on the ground.",
    "Reply with a single word, yes or no. TARGET SENTENCE: ANSWER: yes",
    "The village is surrounded by vineyards; the town hall was built in the nineteenth century.",
    "Le village est entouré de vignes ; la mairie a été construite au dix-neuvième siècle.",
    "Das Dorf ist von Weinbergen umgeben; das Rathaus wurde im neunzehnten Jahrhundert gebaut.",
)

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
# config.json key naming the recipe a demo model was fitted with (kit.demo.train); absent: random weights.
TRAINING_KEY = "kit_demo_training"


def build_tiny_llama(
    hub_cache: Path,
    repo_id: str = "kit-demo/tiny-llama",
    *,
    hidden: int = 128,
    heads: int = 2,
    kv_heads: int = 1,
    layers: int = 2,
    context: int = LLAMA_CONTEXT,
    trained: bool = False,
) -> tuple[str, str]:
    """Build (once) a tiny random Llama causal LM with a chat template; returns (repo_id, revision).

    The defaults give head_dim 64, which vLLM's CPU attention also accepts; `context` is
    max_position_embeddings. `trained` fits it to the demo task first (kit.demo.train), so it
    answers the demo prompts with yes or no: what `kit demo` uses.
    """
    shape = {"hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
             "num_hidden_layers": layers, "max_position_embeddings": context}
    wanted = {**shape, TRAINING_KEY: _recipe(trained)}
    return repo_id, _install(Path(hub_cache), repo_id, wanted, lambda out: _write_llama(out, shape, trained))


def build_random_causal_lm(hub_cache: Path, repo_id: str, model_type: str, config: dict[str, Any], *,
                           dtype: str = "bfloat16") -> tuple[str, str]:
    """Build (once) a causal LM of a real architecture (`model_type`, e.g. "qwen3", with its config
    keys: the size of a released model) with seeded random weights in `dtype` and the demo's tokenizer,
    whose ids are all below the model's vocabulary (ids past it decode to nothing); returns
    (repo_id, revision). For checks of speed and memory at a real model's size (bench/gpu)."""
    wanted = {"model_type": model_type, **config}
    return repo_id, _install(Path(hub_cache), repo_id, wanted,
                             lambda out: _write_causal_lm(out, model_type, config, dtype))


def build_tiny_classifier(hub_cache: Path, repo_id: str = "kit-demo/tiny-reranker", *,
                          trained: bool = False) -> tuple[str, str]:
    """Build (once) a tiny random BERT sequence classifier (one logit); returns (repo_id, revision).

    `trained` fits it to the demo reranker prompt first (kit.demo.train): what `kit demo` uses.
    """
    shape = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
             "max_position_embeddings": CLASSIFIER_CONTEXT}
    wanted = {**shape, TRAINING_KEY: _recipe(trained)}
    return repo_id, _install(Path(hub_cache), repo_id, wanted, lambda out: _write_classifier(out, shape, trained))


def _recipe(trained: bool) -> str | None:
    """The training recipe recorded in a trained model's config.json; None for random weights."""
    if not trained:
        return None
    from kit.demo.train import RECIPE

    return RECIPE


def content_revision(folder: Path) -> str:
    """The 40-hex sha1 of a folder's sorted relative file names, sizes and bytes."""
    digest = hashlib.sha1()
    files = sorted((p.relative_to(folder).as_posix(), p) for p in Path(folder).rglob("*") if p.is_file())
    for rel, path in files:
        data = path.read_bytes()
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def repo_folder(hub_cache: Path, repo_id: str) -> Path:
    """The hub cache folder of a model repo: `models--org--name`."""
    return Path(hub_cache) / ("models--" + repo_id.replace("/", "--"))


# --- cache layout -------------------------------------------------------------------


def _install(hub_cache: Path, repo_id: str, shape: dict[str, int], write: Callable[[Path], None]) -> str:
    repo = repo_folder(hub_cache, repo_id)
    current = _current_revision(repo, shape)
    if current is not None:
        ensure_manifest(hub_cache, repo_id, current)
        return current
    return publish_snapshot(hub_cache, repo_id, write)


def publish_snapshot(hub_cache: Path, repo_id: str, write: Callable[[Path], None]) -> str:
    """Build a snapshot with `write(folder)` and publish it in the hub cache as huggingface_hub lays
    one out: snapshots/<revision> (the revision is the content's digest, so the same bytes are the
    same revision), refs/main naming it, and its weights manifest. Returns the revision."""
    repo = repo_folder(hub_cache, repo_id)
    (repo / "snapshots").mkdir(parents=True, exist_ok=True)
    # Built beside its final place so the move into snapshots/ is one rename on one filesystem.
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=repo))
    try:
        try:
            write(tmp)
        except Exception as exc:   # a full disk in safetensors' words: the disk error it is (one line, exit 2)
            found = library_disk_error(exc, repo)
            if found is None:
                raise
            raise found from None
        _apply_umask(tmp)
        revision = content_revision(tmp)
        target = repo / "snapshots" / revision
        if not _is_complete(target, revision):
            if target.exists():
                shutil.rmtree(target)  # a damaged leftover of an earlier build
            try:
                os.rename(tmp, target)
            except OSError:
                # Another process moved identical bytes in first; anything else is real.
                if not _is_complete(target, revision):
                    raise
        # no trailing newline: huggingface_hub reads refs/<name> verbatim
        write_text_atomic(repo / "refs" / "main", revision)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ensure_manifest(hub_cache, repo_id, revision)
    return revision


def ensure_manifest(hub_cache: Path, repo_id: str, revision: str) -> None:
    """Write the weights manifest of a built snapshot (every file), as `kit weights stage` does for a
    downloaded one, unless a sound one is there; a cache this process cannot write keeps none."""
    from kit.errors import ConfigError
    from kit.weights.manifest import (build_manifest, local_sizes, manifest_path, read_manifest, size_problems,
                                      snapshot_dir, write_manifest)

    snapshot = snapshot_dir(hub_cache, repo_id, revision)
    sizes = local_sizes(snapshot)
    try:
        found = read_manifest(manifest_path(hub_cache, repo_id, revision))
    except ConfigError:
        found = None
    if found is not None and not size_problems(found, sizes) and set(found.files) == set(sizes):
        return
    try:
        write_manifest(hub_cache, build_manifest(snapshot, repo_id, revision, sizes))
    except OSError:
        pass


def _current_revision(repo: Path, shape: dict[str, int]) -> str | None:
    """refs/main's revision when its snapshot is complete and has the wanted shape."""
    try:
        revision = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    snapshot = repo / "snapshots" / revision
    if not _HEX40.match(revision) or not _is_complete(snapshot, revision):
        return None
    config = json.loads((snapshot / "config.json").read_text(encoding="utf-8"))
    return revision if all(config.get(k) == v for k, v in shape.items()) else None


def _is_complete(snapshot: Path, revision: str) -> bool:
    return snapshot.is_dir() and content_revision(snapshot) == revision


def _apply_umask(folder: Path) -> None:
    """Give the folder and its files the usual umask modes.

    mkdtemp (0700) and the safetensors writer (0600) would otherwise hide a shared cache
    from other users and from containers running under another uid.
    """
    mask = umask()
    os.chmod(folder, 0o777 & ~mask)
    for path in folder.rglob("*"):
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~mask)


# --- model writers -----------------------------------------------------------------------


def _write_llama(out: Path, shape: dict[str, int], trained: bool = False) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _bpe_tokenizer(shape["max_position_embeddings"])
    config = LlamaConfig(
        vocab_size=len(tokenizer), intermediate_size=2 * shape["hidden_size"],
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False, **shape,
    )
    model = LlamaForCausalLM(config)
    _fill_seeded(model)
    if trained:
        from kit.demo.train import fit_llama

        fit_llama(model, tokenizer)
        model.config.update({TRAINING_KEY: _recipe(True)})
    _save_causal_lm(out, model, tokenizer)


def _write_causal_lm(out: Path, model_type: str, config: dict[str, Any], dtype: str) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = _bpe_tokenizer(int(config.get("max_position_embeddings", LLAMA_CONTEXT)))
    settings = AutoConfig.for_model(model_type, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                    eos_token_id=tokenizer.eos_token_id, **config)
    model = AutoModelForCausalLM.from_config(settings, dtype=getattr(torch, dtype))
    _fill_seeded(model)
    _save_causal_lm(out, model, tokenizer)


def _save_causal_lm(out: Path, model: Any, tokenizer: Any) -> None:
    """Save a causal LM and its tokenizer with greedy generation settings naming the tokenizer's ids."""
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _normalize_json(out)


def _write_classifier(out: Path, shape: dict[str, int], trained: bool = False) -> None:
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = _wordpiece_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer), intermediate_size=2 * shape["hidden_size"], num_labels=1, pad_token_id=tokenizer.pad_token_id, **shape,
    )
    model = BertForSequenceClassification(config)
    _fill_seeded(model)
    if trained:
        from kit.demo.train import fit_classifier

        fit_classifier(model, tokenizer)
        model.config.update({TRAINING_KEY: _recipe(True)})
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _normalize_json(out)


def _fill_seeded(model: Any) -> None:
    """Overwrite every parameter from one seeded generator (norms 1, biases 0, the rest N(0, std)).

    Seeded `from_config` init differs across transformers versions for some models (BERT),
    so the weights must not depend on it.
    """
    import torch

    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith(".bias"):
                param.zero_()
            elif "norm" in name.lower():
                param.fill_(1.0)
            else:
                param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float32) * WEIGHT_STD)


def _normalize_json(out: Path) -> None:
    """Make the saved JSON loadable by transformers 4.57 and 5.x and free of the writer's version."""
    for path in sorted(out.glob("*.json")):
        if path.name == "tokenizer.json":
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        # The writer's version would change the content hash from one image to the next.
        data.pop("transformers_version", None)
        if path.name == "tokenizer_config.json":
            # 5.x writes "TokenizersBackend", which 4.57 cannot load.
            data["tokenizer_class"] = "PreTrainedTokenizerFast"
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


# --- tokenizers ----------------------------------------------------------------------------


def _bpe_tokenizer(context: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384, special_tokens=["<pad>", "<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))],
    )
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        padding_side="left", model_max_length=context, model_input_names=["input_ids", "attention_mask"],
    )
    hf.chat_template = CHAT_TEMPLATE
    return hf


def _wordpiece_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok = Tokenizer(models.WordPiece(_wordpiece_vocab(normalizer, pre_tokenizer, 512), unk_token="[UNK]"))
    tok.normalizer, tok.pre_tokenizer, tok.decoder = normalizer, pre_tokenizer, decoders.WordPiece()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=CLASSIFIER_CONTEXT,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def _wordpiece_vocab(normalizer: Any, pre_tokenizer: Any, size: int) -> dict[str, int]:
    """Specials, every corpus character alone and as ##suffix, then the most frequent corpus words.

    Counted here rather than by tokenizers' WordPieceTrainer, whose vocabulary order (and so
    its ids and the content hash) changes from one run to the next.
    """
    counts: Counter[str] = Counter()
    for line in CORPUS:
        counts.update(word for word, _span in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line)))
    alphabet = sorted({c for word in counts for c in word})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *alphabet, *("##" + c for c in alphabet)]
    taken = set(tokens)
    words = [w for w, _n in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if w not in taken]
    tokens += words[: max(0, size - len(tokens))]
    return {token: i for i, token in enumerate(tokens)}
