package core

import "github.com/sluicedb/sluice/internal/bugs"

func plantedWrongBaseOffset() bool { return bugs.On(bugs.WrongBaseOffset) }
