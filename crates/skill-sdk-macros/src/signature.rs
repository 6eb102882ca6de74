//! The shape of a skill function: `[async] fn f(inputs: In[, ctx: SkillContext]) -> Result<Out, E>`.

use syn::{FnArg, GenericArgument, ItemFn, PathArguments, ReturnType, Type};

use crate::args::Errors;

/// What the expansion needs from the function.
pub(crate) struct Signature {
    pub inputs: Type,
    pub outputs: Type,
    pub takes_context: bool,
    pub is_async: bool,
}

const SHAPE: &str = "a skill function is `[async] fn name(inputs: In) -> Result<Out, SkillError>` or \
                     `[async] fn name(inputs: In, ctx: SkillContext) -> Result<Out, SkillError>`";

fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => path.qself.is_none() && path.path.segments.last().is_some_and(|s| s.ident == name),
        _ => false,
    }
}

/// `Out` of `Result<Out, E>` (or of an alias with the output first, like `skill_sdk::Result<Out>`).
fn output_type(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &segment.arguments else { return None };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty.clone()),
        _ => None,
    })
}

/// The untyped JSON containers: a skill taking or returning one has no contract to speak of.
const UNTYPED: &[&str] = &["Value", "Map", "HashMap", "BTreeMap", "IndexMap"];

/// Refuses an untyped map (`serde_json::Value`, `Map`, `HashMap`, …) as the inputs or outputs
/// unless an explicit schema stands for it, as the reference refuses a plain `dict`.
pub(crate) fn check_typed(ty: &Type, what: &str, argument: &str, explicit: bool, errors: &mut Errors) {
    if explicit {
        return;
    }
    if let Some(name) = UNTYPED.iter().find(|name| last_segment_is(ty, name)) {
        errors.at(
            ty,
            format!(
                "{what} are an untyped map (`{name}`), which would export as \"any object\": use a struct that \
                 derives the serde and JsonSchema traits, or give `{argument} = serde_json::json!({{...}})`"
            ),
        );
    }
}

fn check_value_type(ty: &Type, what: &str, errors: &mut Errors) {
    match ty {
        Type::Reference(_) => errors.at(ty, format!("take {what} by value: the runtime owns the decoded value")),
        Type::ImplTrait(_) => errors.at(
            ty,
            format!("{what} must be a named type that implements the serde and JsonSchema traits, not `impl Trait`"),
        ),
        Type::Infer(_) => errors.at(ty, format!("{what} must be a named type")),
        _ => {}
    }
}

/// Checks the function's shape, reporting every problem on its own tokens.
pub(crate) fn check(function: &ItemFn, errors: &mut Errors) -> Option<Signature> {
    let sig = &function.sig;
    let before = errors_len(errors);
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "a skill function cannot be generic: its contract needs concrete input and output types",
        );
    }
    if let Some(constness) = &sig.constness {
        errors.at(constness, "a skill function cannot be `const`");
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.at(unsafety, "a skill function cannot be `unsafe`: callers reach it over the network");
    }
    if let Some(abi) = &sig.abi {
        errors.at(abi, "a skill function cannot declare an ABI");
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(variadic, SHAPE);
    }
    let mut typed = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.at(receiver, "a skill is a free function, not a method: remove `self`"),
            FnArg::Typed(pat_type) => typed.push(&*pat_type.ty),
        }
    }
    if typed.is_empty() || typed.len() > 2 {
        let place: &dyn quote::ToTokens = if sig.inputs.is_empty() { &sig.ident } else { &sig.inputs };
        errors.at(
            place,
            format!("expected one or two parameters (inputs, or inputs and ctx), found {}: {SHAPE}", typed.len()),
        );
    }
    if let Some(inputs) = typed.first() {
        check_value_type(inputs, "the inputs", errors);
    }
    let takes_context = typed.len() == 2;
    if let Some(ctx) = typed.get(1)
        && !last_segment_is(ctx, "SkillContext")
    {
        errors.at(*ctx, "the second parameter is the call context: write `ctx: SkillContext`");
    }
    let outputs = match &sig.output {
        ReturnType::Default => {
            errors.at(&sig.ident, format!("a skill returns its outputs: add `-> Result<Out, SkillError>` ({SHAPE})"));
            None
        }
        ReturnType::Type(_, ty) => match output_type(ty) {
            Some(out) => {
                check_value_type(&out, "the outputs", errors);
                Some(out)
            }
            None => {
                errors.at(ty, "return `Result<Out, SkillError>`: a failure is a SkillError, the outputs a named type");
                None
            }
        },
    };
    if errors_len(errors) != before {
        return None;
    }
    Some(Signature {
        inputs: typed.first().map(|t| (*t).clone())?,
        outputs: outputs?,
        takes_context,
        is_async: sig.asyncness.is_some(),
    })
}

fn errors_len(errors: &Errors) -> usize {
    errors.count()
}
