"""Images: build (docker SDK), convert (SIF, sqsh), lock files, verify."""
