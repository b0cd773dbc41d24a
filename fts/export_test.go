package fts

import "github.com/lochdata/loch"

var errInvalid = loch.ErrInvalidArgument
