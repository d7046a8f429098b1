import native_shim_stores

native_shim_stores.install()
