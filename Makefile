# loch's build. `make test` installs the pinned test servers (once) and runs
# every Go test with the race detector against them. `make test-gpu` runs the
# GPU tests on a machine with a CUDA GPU (not part of test).

GO    ?= go
NPM   ?= npm
TOOLS ?= $(HOME)/.cache/loch/tools

# Pinned test servers. Changing a pin installs the new version next to the
# old one (each lives in a directory named for its version).
MINIO_VERSION    ?= v0.0.0-20260212201848-7aac2a2c5b7c
FAKE_GCS_VERSION ?= v1.56.1
AZURITE_VERSION  ?= 3.35.0

MINIO    := $(TOOLS)/minio-$(MINIO_VERSION)/minio
FAKE_GCS := $(TOOLS)/fake-gcs-server-$(FAKE_GCS_VERSION)/fake-gcs-server
AZURITE  := $(TOOLS)/azurite-$(AZURITE_VERSION)/node_modules/.bin/azurite-blob

# internal/testserver finds the servers through these.
export LOCH_MINIO    := $(MINIO)
export LOCH_FAKE_GCS := $(FAKE_GCS)
export LOCH_AZURITE  := $(AZURITE)

.PHONY: all tools test build vet demo bench
all: build

# tools installs what is missing and links $(TOOLS)/bin/<name> to the pinned
# versions, so a plain `go test` finds them too. With everything present it
# does nothing but check the links.
tools: $(MINIO) $(FAKE_GCS) $(AZURITE)
	@mkdir -p $(TOOLS)/bin
	@ln -sfn $(MINIO) $(TOOLS)/bin/minio
	@ln -sfn $(FAKE_GCS) $(TOOLS)/bin/fake-gcs-server
	@ln -sfn $(AZURITE) $(TOOLS)/bin/azurite-blob

# go-tool builds $(1)@$(2) into the directory of the target, unless
# $(TOOLS)/bin/$(3) is a binary built from exactly that module version, which
# is then copied instead.
define go-tool
	@mkdir -p $(@D)
	@if [ ! -L $(TOOLS)/bin/$(3) ] && $(GO) version -m $(TOOLS)/bin/$(3) 2>/dev/null | grep -q "^	mod	$(1)	$(2)	"; then \
		echo "reusing $(TOOLS)/bin/$(3) ($(1)@$(2))"; \
		cp $(TOOLS)/bin/$(3) $@.tmp && mv $@.tmp $@; \
	else \
		echo "go install $(1)@$(2)"; \
		GOBIN=$(@D) GOFLAGS= $(GO) install $(1)@$(2); \
	fi
endef

$(MINIO):
	$(call go-tool,github.com/minio/minio,$(MINIO_VERSION),minio)

$(FAKE_GCS):
	$(call go-tool,github.com/fsouza/fake-gcs-server,$(FAKE_GCS_VERSION),fake-gcs-server)

# Azurite is installed into a temporary directory that is renamed into place
# only once npm has succeeded, so an interrupted install is redone.
$(AZURITE):
	@command -v node >/dev/null || { echo "azurite needs node (>= 20) on PATH" >&2; exit 1; }
	rm -rf $(TOOLS)/azurite-$(AZURITE_VERSION).tmp
	mkdir -p $(TOOLS)/azurite-$(AZURITE_VERSION).tmp
	$(NPM) install --prefix $(TOOLS)/azurite-$(AZURITE_VERSION).tmp --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)
	rm -rf $(TOOLS)/azurite-$(AZURITE_VERSION)
	mv $(TOOLS)/azurite-$(AZURITE_VERSION).tmp $(TOOLS)/azurite-$(AZURITE_VERSION)
	@touch $@

# sysdeps installs the system libraries that cgo code links against:
# libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev) for imaging's
# fast JPEG decoder. With the header present it does nothing. Where it cannot
# be installed, build and test with GOFLAGS=-tags=noturbojpeg instead (the
# pure-Go decoder, about half as fast).
.PHONY: sysdeps
sysdeps:
	@.ci/apt-install sysdeps '[ -f /usr/include/turbojpeg.h ] || pkg-config --exists libturbojpeg 2>/dev/null' \
		' or build with GOFLAGS=-tags=noturbojpeg' libturbojpeg0-dev
build: sysdeps
test: sysdeps

# browser installs Debian's chromium, which the viewer's browser test
# (viewer/browser_test.go, driven by chromedp) runs headless; a missing
# browser fails that test, it never skips.
.PHONY: browser
browser:
	@.ci/apt-install browser 'command -v chromium >/dev/null || command -v chromium-browser >/dev/null' '' chromium
test: browser

# screenshots makes docs/viewer-grid.png and docs/viewer-diff.png (the
# viewer's page, docs/viewer.md) again from the viewer's browser test.
.PHONY: screenshots
screenshots: browser tools
	rm -rf $(CURDIR)/.screens
	LOCH_ARTIFACTS=$(CURDIR)/.screens $(GO) test -count=1 -run 'TestBrowser/local' ./viewer
	$(VENV)/bin/python -c "from PIL import Image; \
		Image.open('.screens/loch-viewer/grid.png').crop((0, 0, 1200, 1330)).save('docs/viewer-grid.png', optimize=True); \
		Image.open('.screens/loch-viewer/diff.png').crop((0, 0, 1200, 1000)).save('docs/viewer-diff.png', optimize=True)"
	rm -rf $(CURDIR)/.screens
# sysdeps-ffmpeg (issue 16) installs FFmpeg's libraries for media's video
# and audio decoder (Debian: libavcodec-dev libavformat-dev libswscale-dev
# libswresample-dev libavutil-dev) and the ffmpeg command that tests use to
# make their media and reference frames. With all present it does nothing.
# Where they cannot be installed, build with GOFLAGS=-tags=noffmpeg: media
# columns then fail at the first decode with an error naming the libraries.
FFMPEG_DEBS = ffmpeg libavcodec-dev libavformat-dev libswscale-dev libswresample-dev libavutil-dev pkg-config
.PHONY: sysdeps-ffmpeg
sysdeps: sysdeps-ffmpeg
sysdeps-ffmpeg:
	@.ci/apt-install sysdeps 'command -v ffmpeg >/dev/null && pkg-config --exists libavformat libavcodec libswscale libswresample libavutil 2>/dev/null' \
		' or build with GOFLAGS=-tags=noffmpeg' $(FFMPEG_DEBS)

# sysdeps-psql (issue 38) installs psql (Debian: postgresql-client), the
# client that pgwire's tests run against loch serve --pg (\dt, \d, \copy).
# With psql on PATH it does nothing; its tests fail without it.
.PHONY: sysdeps-psql
sysdeps: sysdeps-psql
test: sysdeps-psql
sysdeps-psql:
	@.ci/apt-install sysdeps 'command -v psql >/dev/null' ' (pgwire tests need psql)' postgresql-client

# sysdeps-jdbc (issue 38) installs a JDK (Debian: default-jdk-headless) when
# javac is missing, and PostgreSQL's JDBC driver from Maven Central (by mvn
# when present, else curl; its sha256 checked) as PGJDBC: pgwire's
# TestJDBC compiles and runs a small Java program with it, as a BI tool's
# table browser would connect. With both present it does nothing; TestJDBC
# fails without them.
PGJDBC_VERSION = 42.7.14
PGJDBC_SHA256 = 73914527305a40cce504b0d3d90b23caf565136912d607ae8ae7c5895512332c
PGJDBC := $(TOOLS)/pgjdbc/postgresql-$(PGJDBC_VERSION).jar
.PHONY: sysdeps-jdbc
sysdeps: sysdeps-jdbc
test: sysdeps-jdbc
sysdeps-jdbc: $(PGJDBC)
	@.ci/apt-install sysdeps 'command -v javac >/dev/null && command -v java >/dev/null' " (pgwire's TestJDBC needs javac and java)" default-jdk-headless
$(PGJDBC):
	@mkdir -p $(dir $@)
	@if command -v mvn >/dev/null; then \
		mvn -q dependency:copy -Dartifact=org.postgresql:postgresql:$(PGJDBC_VERSION) -DoutputDirectory=$(dir $@) -Dmdep.overWriteReleases=true; \
	else \
		curl -fsSL -o $@.tmp https://repo1.maven.org/maven2/org/postgresql/postgresql/$(PGJDBC_VERSION)/postgresql-$(PGJDBC_VERSION).jar && mv $@.tmp $@; \
	fi
	@echo "$(PGJDBC_SHA256)  $@" | sha256sum -c --quiet - || { rm -f $@; echo "sysdeps: $@ does not have the pinned sha256" >&2; exit 1; }

test: tools
	$(GO) vet ./...
	$(GO) test -race -timeout 20m ./...
	$(GO) test -count=1 -run TestBoundedMemory ./loader # RSS bounds, without the race detector's overhead
	$(GO) vet -tags=duckdb_arrow ./capi ./query
	$(GO) test -race -tags=duckdb_arrow -run 'SQL|Arrow' ./capi # SQL in the library (capi/sql.go), built as setup.py builds it
	$(VENV)/bin/python -m pytest python/tests

# demo makes a small image dataset, ingests it into a local loch dataset,
# inspects it, verifies it and streams it; then makes a catalog of tables
# with SQL, joins them and trains on the join.
DEMO ?= $(CURDIR)/.demo
DEMO_CLASSES := 'class00', 'class01', 'class02', 'class03', 'class04', 'class05', 'class06', 'class07', 'class08', 'class09'
demo: build
	rm -rf $(DEMO)
	$(GO) run ./examples/makeimages -n 2000 -classes 10 -size 64 $(DEMO)/images
	bin/loch ingest imagefolder $(DEMO)/images $(DEMO)/pets --image-compression png
	bin/loch info $(DEMO)/pets
	bin/loch show $(DEMO)/pets --row 0 --out $(DEMO)/row0
	bin/loch verify $(DEMO)/pets
	bin/loch scan $(DEMO)/pets
	bin/loch log $(DEMO)/pets
	$(VENV)/bin/python examples/train_torch.py $(DEMO)/pets --epochs 1
	bin/loch query $(DEMO)/pets "SELECT label, count(*) AS n, avg(image.bytes)::INT AS png_bytes FROM ds GROUP BY label ORDER BY label"
	bin/loch query $(DEMO)/pets "SELECT image, label FROM ds WHERE enum_code(label) < 5 ORDER BY random()" --seed 1 --save first-five
	bin/loch selections $(DEMO)/pets
	$(VENV)/bin/python examples/train_torch.py $(DEMO)/pets --epochs 1 --selection first-five
	# Tables: a catalog made, filled, queried and trained on with SQL; the
	# label comes from a second table through a join (docs/sql.md).
	bin/loch sql $(DEMO)/lake "CREATE TABLE frames (id BIGINT, class TEXT, image IMAGE('png'))"
	bin/loch sql $(DEMO)/lake "INSERT INTO frames SELECT row_number() OVER (ORDER BY file), split_part(file, '/', -2), loch_file(file) FROM glob('$(DEMO)/images/*/*.png')" -m "the demo images"
	bin/loch sql $(DEMO)/lake "CREATE TABLE labels (class TEXT, label CLASS_LABEL($(DEMO_CLASSES)))"
	bin/loch sql $(DEMO)/lake "INSERT INTO labels SELECT DISTINCT class, class FROM frames"
	bin/loch tables $(DEMO)/lake
	bin/loch sql $(DEMO)/lake "SELECT l.label, count(*) AS n FROM frames f JOIN labels l USING (class) GROUP BY l.label ORDER BY l.label"
	bin/loch query $(DEMO)/lake "SELECT f._rowid, f.image, l.label FROM frames f JOIN labels l USING (class) WHERE f.id % 2 = 0" --table frames --save even
	$(VENV)/bin/python examples/train_torch.py $(DEMO)/lake --epochs 1 --table frames \
		--sql "SELECT f._rowid, f.image, l.label FROM frames f JOIN labels l USING (class) ORDER BY random()"
	# Vector search: the nearest images of one image by an embedding column,
	# then training on the neighbours of a query (docs/vectors.md).
	$(VENV)/bin/python examples/neighbours.py $(DEMO)/pets $(DEMO)/pets-emb
	$(VENV)/bin/python examples/train_torch.py $(DEMO)/pets-emb --epochs 1 --selection neighbours
	@echo "look at it in the browser: bin/loch serve $(DEMO)/pets   (then open http://127.0.0.1:7474/)"

# venv makes or updates $(VENV) with the Python SDK (python/, with its Go
# library built from this checkout) and the pinned test dependencies
# (python/requirements-test.txt). Stamps make a second run quick: the SDK is
# reinstalled only when Go or Python sources changed, the dependencies only
# when their pins did.
PYTHON ?= python3
VENV   ?= .venv
PY_SOURCES := $(shell find python/loch python/setup.py python/pyproject.toml -name '*.py' -o -name '*.toml' -o -name py.typed 2>/dev/null)
GO_SOURCES := $(shell find . -path ./.venv -prune -o -path ./.demo -prune -o -name '*.go' ! -name '*_test.go' -print) capi/loch.h go.mod go.sum version/VERSION
.PHONY: venv pytest
venv: sysdeps $(VENV)/.loch-sdk
test: venv
demo: venv

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.loch-deps: python/requirements-test.txt | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r python/requirements-test.txt
	@touch $@

$(VENV)/.loch-sdk: $(VENV)/.loch-deps $(PY_SOURCES) $(GO_SOURCES)
	$(VENV)/bin/python -m pip install -q --no-build-isolation --no-deps ./python
	@touch $@

# pytest runs the Python SDK's tests.
pytest: venv
	$(VENV)/bin/python -m pytest python/tests

# test-gpu runs the GPU tests (python/gpu_tests: ds.pytorch(device="cuda"),
# pin_memory, ds.jax(device=, sharding=)) with $(VENV), jax's CUDA plugin
# added (python/requirements-gpu.txt), on a machine with a CUDA GPU. Without
# one they fail saying so; LOCH_TEST_DEVICE=cpu is a dry run of their logic.
# Not part of test (CI has no GPU). python/gpu_tests/run.sh runs them and the
# GPU benchmarks from a wheel on a GPU machine without Go.
GPU_TEST_ARGS ?=
.PHONY: test-gpu
test-gpu: venv $(VENV)/.loch-gpu-deps
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/python -m pytest -p no:cacheprovider python/gpu_tests $(GPU_TEST_ARGS)

$(VENV)/.loch-gpu-deps: python/requirements-gpu.txt | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q -r python/requirements-gpu.txt
	@touch $@

# gpu-wheels downloads into dist/gpu-wheels the wheels pinned in
# python/requirements-gpu-wheels.txt (DALI for CUDA 13 and what it needs
# beyond a GPU machine's own packages), for CPython $(GPU_PYTHON) on x86-64
# Linux, which python/gpu_tests/run.sh installs there (no network) for its
# DALI baseline. About 260 MB: more than the device tool carries (64 MiB),
# so a machine reached through it runs without the DALI stage.
GPU_PYTHON ?= 3.12
.PHONY: gpu-wheels
gpu-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version $(GPU_PYTHON) --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 --dest dist/gpu-wheels -r python/requirements-gpu-wheels.txt
	@du -sh dist/gpu-wheels

# wheel builds dist/loch-<version>-py3-none-manylinux_<glibc>_x86_64.whl:
# libloch.so and the loch CLI built here (setup.py), the shared libraries
# they link beyond the manylinux policy (libturbojpeg) vendored into it by
# auditwheel with patchelf, the glibc tag the one auditwheel finds the
# binaries need. python/tests/test_wheel.py installs it into a fresh venv
# (`make test` builds it first). The wheel's library and CLI are built
# without FFmpeg (-tags=noffmpeg): vendoring Debian's FFmpeg would add about
# 120 shared libraries and 65 MB, GPL-licensed encoders among them, to every
# install; video and audio columns from the wheel fail at their first
# decode with an error naming the missing libraries (python/README.md). A
# stamp makes a second run quick: the wheel is rebuilt only when the SDK
# was.
WHEEL_STAMP := dist/.loch-wheel
WHEEL_GOFLAGS ?= -tags=noffmpeg
.PHONY: wheel patchelf
wheel: $(WHEEL_STAMP)
test: wheel

$(WHEEL_STAMP): $(VENV)/.loch-sdk python/requirements-wheel.txt | sysdeps patchelf $(VENV)/.loch-wheel-deps
	rm -rf dist/raw python/build dist/loch-*.whl
	LOCH_GOFLAGS="$(WHEEL_GOFLAGS)" \
		$(VENV)/bin/python -m pip wheel -q --no-deps --no-build-isolation ./python -w dist/raw
	$(VENV)/bin/python -m auditwheel repair -w dist dist/raw/loch-*.whl
	rm -rf dist/raw python/build
	@ls -l dist/loch-*.whl
	@touch $@

# patchelf (Debian's package), which auditwheel runs, installed when missing.
patchelf:
	@.ci/apt-install wheel 'command -v patchelf >/dev/null' '' patchelf

$(VENV)/.loch-wheel-deps: python/requirements-wheel.txt | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q -r python/requirements-wheel.txt
	touch $@

# bench-python compares ds.pytorch() with `loch bench` (the Go loader) and
# with torch DataLoaders over a JPEG folder and .npy files of the same
# images (python/bench/bench_loaders.py, a few minutes; not part of test).
# Options go in BENCH_PYTHON_ARGS, e.g. "--dir /tmp/lb --json /tmp/lb/out.json --idle-load 0.8".
BENCH_PYTHON_ARGS ?=
.PHONY: bench-python
bench-python: build venv
	$(VENV)/bin/python python/bench/bench_loaders.py --loch bin/loch $(BENCH_PYTHON_ARGS)

# bench-compare runs one epoch through loch and through a numpy-memmap
# baseline of the same bytes over shuffle mode x codec x storage (local,
# MinIO) x DataLoader workers, and checks issue 10's loader targets
# (python/bench/compare.py, 30 to 60 minutes on 2 cores; not part of
# test). Options go in BENCH_COMPARE_ARGS, e.g. "--quick" (a few seconds)
# or "--dir /tmp/cmp --json /tmp/cmp/out.json --rows 20000".
BENCH_COMPARE_ARGS ?=
.PHONY: bench-compare
bench-compare: build venv $(MINIO)
	$(VENV)/bin/python python/bench/compare.py --loch bin/loch --minio $(MINIO) $(BENCH_COMPARE_ARGS)

# bench-media measures issue 16's video clips and audio segments through
# loch's loader against PyAV, torchcodec and soundfile in a torch
# DataLoader with 2 workers, and the bytes fetched per clip
# (python/bench/bench_media.py, a few minutes; not part of test). Its
# bench-only packages (python/requirements-bench.txt) go into the venv
# here, not in requirements-test.txt. Options go in BENCH_MEDIA_ARGS, e.g.
# "--rounds 5 --json /tmp/media.json".
BENCH_MEDIA_ARGS ?=
.PHONY: bench-media
bench-media: build venv $(VENV)/.loch-bench-deps
	$(VENV)/bin/python python/bench/bench_media.py --loch bin/loch $(BENCH_MEDIA_ARGS)

# bench-living compares loch's compaction and upsert with Lance's on the
# same rows (python/bench/bench_living.py; pylance is a bench-only
# dependency). Options go in BENCH_LIVING_ARGS, e.g. "--rows 200000
# --commits 200 --rounds 3".
BENCH_LIVING_ARGS ?=
.PHONY: bench-living
bench-living: venv $(VENV)/.loch-bench-deps
	$(VENV)/bin/python python/bench/bench_living.py $(BENCH_LIVING_ARGS)

# bench-vector measures loch's ivf-flat and ivf-pq against faiss-cpu
# (IVFFlat, IVFPQ, HNSW) and pylance's IVF_PQ on the same vectors: build
# time, index bytes, peak RSS, recall@10 and latency
# (bench/vector/bench_vector.py, issue 37; 1M x 128 takes over an hour
# on 2 busy cores, faiss's HNSW build the most). BENCH_VECTOR_ARGS picks
# the data: "--data digits", "--data debian --lists DIR" (Debian's package
# descriptions embedded by all-MiniLM-L6-v2, or "--model lsa",
# bench/search/debian.py) or "--data mixture:N". The hybrid search's
# recall: bench/search/bench_hybrid.py.
BENCH_VECTOR_ARGS ?= --data mixture:1000000 --work /tmp/loch-bench-vector --markdown
.PHONY: bench-vector
bench-vector: venv $(VENV)/.loch-bench-deps
	$(VENV)/bin/python bench/vector/bench_vector.py $(BENCH_VECTOR_ARGS)

# bench-ingest times loch's ingest against copying the same bytes (issue
# 39): tar cf of 10,000 224px JPEGs against loch ingest imagefolder (each
# --validate), Lance and Deep Lake when installed; DuckDB's COPY TO parquet
# against loch ingest parquet; cp/dd of a .npy against loch ingest npy; and
# the ingest at 3 sizes 10x apart (python/bench/bench_ingest.py, minutes;
# not part of test). Options go in BENCH_INGEST_ARGS, e.g. "--scale
# 1000,10000,100000 --rounds 3".
BENCH_INGEST_ARGS ?=
.PHONY: bench-ingest
bench-ingest: build venv $(VENV)/.loch-bench-deps
	$(VENV)/bin/python python/bench/bench_ingest.py --loch bin/loch $(BENCH_INGEST_ARGS)

$(VENV)/.loch-bench-deps: python/requirements-bench.txt | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q -r python/requirements-bench.txt
	touch $@

# chaos runs the standing robustness campaign (internal/chaos,
# docs/reliability.md; not part of test): kill -9 during writes, MinIO
# stopped and restarted under reads and writes, every object kind of a
# dataset and a catalog damaged and read by every reader, and every fuzz
# target; it prints a table and fails on any panic, hang, wrong read or
# lost commit. The short form (these defaults) takes 15 to 20 minutes on 2
# cores; the nightly form is `make chaos CHAOS_N=80 FUZZTIME=10m` (about 4.5
# hours: 24 fuzz targets). CHAOS_SEED=S replays a run's choices,
# CHAOS_FAMILIES=crash,outage,damage,fuzz picks families, CHAOS_OUT=FILE
# writes the table there.
CHAOS_N  ?= 12
FUZZTIME ?= 20s
.PHONY: chaos
chaos: tools build
	CHAOS_N=$(CHAOS_N) FUZZTIME=$(FUZZTIME) CHAOS_LOCH=$(CURDIR)/bin/loch \
		$(GO) test -tags chaos -count=1 -timeout 0 -v -run '^TestCampaign$$' ./internal/chaos

# bench runs the Go benchmarks (each prints its baseline in the same run).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./...

vet:
	$(GO) vet ./...

# build builds the CLI once cmd/loch exists.
build:
	@if [ -d cmd/loch ]; then \
		echo "$(GO) build -o bin/loch ./cmd/loch"; \
		$(GO) build -o bin/loch ./cmd/loch; \
	else \
		echo "cmd/loch does not exist yet: nothing to build"; \
	fi
