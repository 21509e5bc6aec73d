"""Photos, images, PDFs and text files: from a platform attachment to stored session content."""
