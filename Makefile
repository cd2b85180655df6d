# kit: common tasks. `make help` lists them.
SHELL := /bin/bash
VENV ?= .venv
KIT := $(VENV)/bin/kit

.PHONY: help venv demo test test-fast lint
help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

venv:  ## create/update .venv with kit, its worker and report extras and the test tools
	bash scripts/venv.sh

demo: venv  ## run the embedded tiny sweep end to end (no files, no network)
	$(KIT) demo

test:  ## set up and run the whole test suite (starts the services it needs)
	bash scripts/test.sh

test-fast: venv  ## the fast tier: pure logic, generated scripts, config errors (< 5 min)
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then bash scripts/dev/packages.sh --fast-tier; fi
	KIT_TEST_TIER=fast $(VENV)/bin/python -m pytest -m "not slow and not integration and not e2e and not images"

.PHONY: bench bench-quick bench-readme
bench: venv  ## the benchmark suite at release size (4,250 checkpoints; a few minutes): figures, anchors, ratios
	$(VENV)/bin/python -m bench

bench-quick: venv  ## the benchmark suite on a small tree, one run of each (proves it runs; CI)
	$(VENV)/bin/python -m bench --quick

bench-readme:  ## copy the last `make bench` table into README.md's Performance section
	$(VENV)/bin/python bench/readme.py

# ---------------------------------------------------------------- images (containers/images.toml)
# Backend images from hashed locks, built with the docker SDK, converted to SIF and sqsh
# (kit images --help). image-NAME, sif-NAME, sqsh-NAME, save-NAME (docker archive),
# verify-NAME and lint-NAME take any NAME of containers/images.toml.
IMAGES := vllm gguf transformers-5.17 transformers-5.11 gliner2 gliclass
WHEELHOUSE ?= $(HOME)/.cache/kit/wheelhouse
IMAGES_DIR ?= build/images
.PHONY: locks base-image image-tools images image-transformers-5.17-cpu apptainer-defs

locks: venv  ## regenerate every lock file with hashes (uv pip compile --generate-hashes)
	$(KIT) images locks

base-image:  ## bootstrap kit/base:bookworm and kit/base:sid (debootstrap + docker import; root)
	bash scripts/bootstrap-base.sh bookworm kit/base:bookworm
	bash scripts/bootstrap-base.sh sid kit/base:sid

image-tools:  ## dockerd, squashfs tools, bases and the Apptainer helper image (root)
	bash scripts/images/tools.sh

images: $(addprefix image-,$(IMAGES))  ## build the six backend images (CUDA, heavy: three need a registry)

image-transformers-5.17-cpu: venv  ## the CPU variant CI builds, offline from a cached wheelhouse
	$(KIT) images build transformers-5.17 --variant cpu --wheelhouse $(WHEELHOUSE)

.PHONY: images-cpu images-cuda test-images
images-cpu: venv  ## the CPU variants of all six images, one at a time, offline (root; sizes and seconds)
	KIT_WHEELHOUSE=$(WHEELHOUSE) bash scripts/images/cpu-images.sh

images-cuda: venv  ## bench, never in CI: the CUDA variants on the Debian base, converted, verified, linted (root; ~10 GB each)
	KIT_WHEELHOUSE=$(WHEELHOUSE) bash scripts/images/cuda-images.sh

test-images: venv  ## the images tier (never in CI): build what is missing, then a sweep with a pair per image
	KIT_IMAGES_TIER=1 KIT_WHEELHOUSE=$(WHEELHOUSE) HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TESTCONTAINERS_RYUK_DISABLED=true \
	  $(VENV)/bin/python -m pytest -m images tests/images --durations=20

# make image-NAME builds what was built and linted here: the registry-free CUDA variant where the image
# has one (transformers-5.17, gguf, vllm), else its registry Dockerfile; VARIANT=registry|cpu|cuda chooses
# (scripts/images/image.sh says which is which; README, Images)
VARIANT ?=
image-%: venv
	bash scripts/images/image.sh $* $(VARIANT)

sif-%: venv
	$(KIT) images convert $* --to sif --out $(IMAGES_DIR)

sqsh-%: venv
	$(KIT) images convert $* --to sqsh --out $(IMAGES_DIR)

save-%: venv
	$(KIT) images save $* --out $(IMAGES_DIR)

verify-%: venv
	$(KIT) images verify $* --out $(IMAGES_DIR)

lint-%: venv
	$(KIT) images lint $*

apptainer-defs: venv  ## regenerate apptainer/*.def from the Dockerfiles (spython plus fixes)
	$(KIT) images defs
