# loch's build. `make test` installs the pinned test servers (once) and runs
# every Go test with the race detector against them.

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

test: tools
	$(GO) vet ./...
	$(GO) test -race -timeout 20m ./...

# demo makes a small image dataset, ingests it into a local loch dataset,
# inspects it, verifies it and streams it.
DEMO ?= $(CURDIR)/.demo
demo: build
	rm -rf $(DEMO)
	$(GO) run ./examples/makeimages -n 2000 -classes 10 -size 64 $(DEMO)/images
	bin/loch ingest imagefolder $(DEMO)/images $(DEMO)/pets --image-compression png
	bin/loch info $(DEMO)/pets
	bin/loch show $(DEMO)/pets --row 0 --out $(DEMO)/row0
	bin/loch verify $(DEMO)/pets
	bin/loch scan $(DEMO)/pets
	bin/loch log $(DEMO)/pets

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
