package objectio_test

import (
	"testing"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/storetest"
)

func TestMemConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectio.Store { return objectio.NewMem() })
}
