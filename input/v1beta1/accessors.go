package v1beta1

// The getters below are nil-safe: an Input, or any block of it, may be left
// out of a Composition, and the function then uses its own defaults.

// GetRouter returns the router block, empty when unset.
func (in *Input) GetRouter() RouterInput {
	if in == nil || in.Router == nil {
		return RouterInput{}
	}
	return *in.Router
}

// GetEngine returns the engine block, empty when unset.
func (in *Input) GetEngine() EngineInput {
	if in == nil || in.Engine == nil {
		return EngineInput{}
	}
	return *in.Engine
}

// GetStorage returns the storage block, empty when unset.
func (in *Input) GetStorage() StorageInput {
	if in == nil || in.Storage == nil {
		return StorageInput{}
	}
	return *in.Storage
}

// GetAdapterSync returns the adapter sync block, empty when unset.
func (in *Input) GetAdapterSync() AdapterSyncInput {
	if in == nil || in.AdapterSync == nil {
		return AdapterSyncInput{}
	}
	return *in.AdapterSync
}
